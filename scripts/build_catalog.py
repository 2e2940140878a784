"""Regenerate optsched/data/workloads.json, the workload catalog shipped with optsched.

Usage: python scripts/build_catalog.py [GAVEL_THROUGHPUTS_JSON]

Part 1 reads Gavel's simulation_throughputs.json (default: ../shared/peer-data/gavel/...) with
optsched's own reader: the 26 single-GPU job types on K80/P100/V100, tagged ``published``.
Part 2 is the table of Hare's eight workloads (Hare, HPDC'22, Table 2) on K80/M60/T4/V100,
which the paper does not publish; every figure below says how it was chosen.
"""

from __future__ import annotations

import sys
from pathlib import Path

from optsched.output import json_text, write_file
from optsched.workloads import Catalog, Cell, Workload, read_gavel_throughputs

ROOT = Path(__file__).resolve().parents[1]
GAVEL = ROOT.parent / "shared" / "peer-data" / "gavel" / "simulation_throughputs.json"

HARE = "Hare (Chen et al., HPDC'22)"
# Peak FP32 TFLOPS per GPU from the vendors' datasheets: K80 (one of its two GPUs, boost)
# 4.37, M60 (one of two) 4.8, T4 8.1, V100 (SXM2) 15.7.
M60_VS_K80 = 4.8 / 4.37

# name: (description, K80 seconds per mini-batch, why, {type: (speed-up vs K80, provenance,
# note)})
CNN = {
    "T4": (
        2.0,
        "derived",
        f"K80 time / 2.0: {HARE} Fig. 2 reports ResNet-50 ~2x faster on "
        "T4 than on K80; applied to this compute-bound CNN by analogy",
    ),
    "V100": (
        7.0,
        "derived",
        f"K80 time / 7.0: {HARE} Fig. 2 reports ResNet-50 ~7x faster on "
        "V100 than on K80; applied to this compute-bound CNN by analogy",
    ),
    "M60": (
        M60_VS_K80,
        "assumed",
        "K80 time / 1.10: ratio of peak FP32 TFLOPS per GPU "
        "(M60 4.8 vs K80 4.37, vendor datasheets); no measurement published",
    ),
}
GRAPH = {
    "T4": (
        1.5,
        "assumed",
        "K80 time / 1.5: between K80 and V100, since Hare Fig. 2 reports "
        "GraphSAGE data-loading bound (~2x on V100); no T4 figure published",
    ),
    "V100": (
        2.0,
        "derived",
        f"K80 time / 2.0: {HARE} Fig. 2 reports GraphSAGE only ~2x "
        "faster even on V100 (data-loading bound, <30% GPU utilisation)",
    ),
    "M60": (
        M60_VS_K80,
        "assumed",
        "K80 time / 1.10: ratio of peak FP32 TFLOPS per GPU "
        "(M60 4.8 vs K80 4.37, vendor datasheets); no measurement published",
    ),
}


def nlp(v100: float, source: str) -> dict[str, tuple[float, str, str]]:
    return {
        "T4": (
            8.1 / 4.37,
            "assumed",
            "K80 time / 1.85: ratio of peak FP32 TFLOPS per GPU "
            "(T4 8.1 vs K80 4.37, vendor datasheets); no measurement published",
        ),
        "V100": (v100, "derived", f"K80 time / {v100:.1f}: {source}"),
        "M60": (
            M60_VS_K80,
            "assumed",
            "K80 time / 1.10: ratio of peak FP32 TFLOPS per GPU "
            "(M60 4.8 vs K80 4.37, vendor datasheets); no measurement published",
        ),
    }


GAVEL_TRANSFORMER = "V100/K80 speed-up of Gavel's Transformer bs128 (5.45 / 0.98 steps/s)"
GAVEL_LM = "V100/K80 speed-up of Gavel's recurrent LM bs20 (64.7 / 17.1 steps/s)"
BASE_WHY = (
    "assumed: Hare publishes no per-batch times; order of magnitude chosen for the "
    "model and batch size of Hare Table 2 on one K80 GPU"
)

HARE_TABLE = {
    "Hare/VGG-19": ("VGG-19 on CIFAR-10, batch 128 (Hare Table 2, CV)", 0.45, CNN),
    "Hare/ResNet-50": ("ResNet-50 on CIFAR-100, batch 64 (Hare Table 2, CV)", 0.30, CNN),
    "Hare/Inception-V3": ("Inception V3 on CIFAR-100, batch 32 (Hare Table 2, CV)", 0.25, CNN),
    "Hare/BERT-base": (
        "BERT-base on SQuAD (downscaled), batch 32 (Hare Table 2, NLP)",
        2.0,
        nlp(5.446105 / 0.981583, f"{GAVEL_TRANSFORMER}, by analogy"),
    ),
    "Hare/Transformer": (
        "Transformer on WMT16 (downscaled), batch 128 (Hare Table 2, NLP)",
        1.0 / 0.981583,
        nlp(5.446105 / 0.981583, GAVEL_TRANSFORMER),
    ),
    "Hare/DeepSpeech": (
        "DeepSpeech on Common Voice, batch 8 (Hare Table 2, speech)",
        0.60,
        nlp(64.742451 / 17.142290, f"{GAVEL_LM}, by analogy (recurrent)"),
    ),
    "Hare/FastGCN": (
        "FastGCN on Cora, batch 128 (Hare Table 2, recommendation/graph)",
        0.02,
        GRAPH,
    ),
    "Hare/GraphSAGE": (
        "GraphSAGE on Cora, batch 16 (Hare Table 2, recommendation/graph)",
        0.03,
        GRAPH,
    ),
}


def hare_workloads() -> dict[str, Workload]:
    out = {}
    for name, (desc, k80, speedups) in HARE_TABLE.items():
        why = BASE_WHY
        if name == "Hare/Transformer":
            why = (
                "derived: Gavel's Transformer bs128 on K80, 0.98 steps/s "
                "(simulation_throughputs.json, stanford-futuredata/gavel@c4fa400)"
            )
        cells = {"K80": Cell(round(k80, 6), "assumed" if why == BASE_WHY else "derived", why)}
        for gtype, (speedup, prov, note) in speedups.items():
            cells[gtype] = Cell(round(k80 / speedup, 6), prov, note)
        out[name] = Workload(name, desc, cells)
    return out


def main() -> None:
    gavel_path = Path(sys.argv[1]) if len(sys.argv) > 1 else GAVEL
    gavel = read_gavel_throughputs(gavel_path)
    catalog = Catalog({**gavel.workloads, **hare_workloads()})
    out = ROOT / "optsched" / "data" / "workloads.json"
    write_file(out, json_text(catalog.to_dict()))
    print(f"wrote {out}: {len(catalog.workloads)} workloads")


if __name__ == "__main__":
    main()
