"""priority-search's two relaxed placement rules side by side (option ``fit``): Σ w_j C_j of
Smith's order decoded with each (the better of the two dispatching rules, as ``decoder=auto``
keeps) on every instance of the Hare paper's sets, and of the search run to its local optimum
(``steps=3000``, seed 0, the default patience) on the exact family's instances of 20, 30 and
50 jobs. The 30-s and 10-minute runs at the Hare paper's scale are in
``benchmarks/paper_scale.sh``. Deterministic: the numbers repeat on any machine.

    python benchmarks/fit_rules.py [--out benchmarks/results/fit-rules.md]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from optsched import solve
from optsched.heuristics.priority_search import _decoder, smith_priorities
from optsched.instance import Instance
from optsched.io import load_instance
from optsched.output import write_file

ROOT = Path(__file__).parents[1]
HARE_SETS = ("hare-gpus", "hare-jobs", "hare-heterogeneity", "hare-mix")


def _instances(folder: str, pattern: str = "*.json") -> list[Instance]:
    paths = sorted((ROOT / "instances" / folder).glob(pattern))
    return [load_instance(p) for p in paths if p.name not in ("manifest.json", "grid.json")]


def _smith(inst: Instance, tight: bool) -> float:
    priority = smith_priorities(inst)
    decoders = [_decoder(inst, reserve, "auto", tight) for reserve in (True, False)]
    return min(d.run(priority, d.start(), None, 0).objective for d in decoders)


def _search(inst: Instance, fit: str) -> float:
    params = {"fit": fit, "steps": 3000}
    return solve(inst, "priority-search", params=params, seed=0).objective


def _row(label: str, changes: list[float]) -> str:
    better, worse = sum(c < 0 for c in changes), sum(c > 0 for c in changes)
    return (
        f"| {label} | {len(changes)} | {statistics.median(changes):+.2f} % | "
        f"{min(changes):+.2f} % | {max(changes):+.2f} % | {better} | {worse} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/fit-rules.md")
    args = parser.parse_args(argv)
    lines = [
        "# priority-search: `fit=tight` against `fit=earliest` (relaxed mode)",
        "",
        "`python benchmarks/fit_rules.py`: the change of Σ w_j C_j from `fit=earliest` to "
        "`fit=tight` (negative: tight is better), per instance set.",
        "",
        "| instances | count | median change | smallest | largest | tight better | worse |",
        "|---|---|---|---|---|---|---|",
    ]
    for folder in HARE_SETS:
        changes = [
            100 * (_smith(inst, True) / _smith(inst, False) - 1) for inst in _instances(folder)
        ]
        lines.append(_row(f"{folder}, Smith's order", changes))
        print(lines[-1], flush=True)
    exact = _instances("exact", "exact-jobs20-*.json") + _instances("exact-large")
    changes = [100 * (_search(inst, "tight") / _search(inst, "earliest") - 1) for inst in exact]
    lines.append(_row("exact family (20-50 jobs), search to its local optimum", changes))
    print(lines[-1], flush=True)
    write_file(Path(args.out), "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
