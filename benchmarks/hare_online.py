"""The Hare paper's simulation study with optsched's policies (issue: online simulator).

Usage: python benchmarks/hare_online.py [--seeds 0 1 2] [--part settings|small|all] --out DIR

- ``settings``: the settings of HPDC'22 Figs. 14–17 (seeds.md §1.8) on ``optsched gen --family
  hare`` instances: 200 jobs on 100–180 GPUs; 160 GPUs with 100–300 jobs; low / middle / high
  heterogeneity (160 GPUs, 200 jobs); job mixes 2:1:1:1, 1:2:1:1, 1:1:2:1, 1:1:1:2. Tasks
  scale with jobs (50,000 × jobs / 300). Methods: offline Hare (``hare-lp``, ``hare-lp-ect``),
  and online ``hlas``, ``srtf``, ``homo``, ``allox`` (relaxed) and ``fifo``, ``tiresias``
  (gang, on the same jobs). Records: ``settings.jsonl``.
- ``small``: HLAS (mappings A, B, C) and the relaxed baselines on the benchmark instances whose
  offline optimum is known (instances/scaling and instances/exact, 10 jobs; optima from
  benchmarks/results/exact): an empirical competitive ratio. Records: ``small.jsonl``.

Resumable: runs already recorded are skipped. ``hare_online_summary.py`` makes the tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optsched import solve
from optsched.generate import HareSpec, generate_hare
from optsched.instance import Instance
from optsched.io import load_instance
from optsched.online.run import run_policy

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = ("hare-lp", "hare-lp-ect")
RELAXED = ("hlas", "srtf", "homo", "allox")
GANG = ("fifo", "tiresias")
MIXES = {"2:1:1:1": (2, 1, 1, 1), "1:2:1:1": (1, 2, 1, 1), "1:1:2:1": (1, 1, 2, 1),
         "1:1:1:2": (1, 1, 1, 2)}


def cells() -> Iterator[tuple[str, str, HareSpec]]:
    """(figure, cell label, spec) of every setting."""
    def spec(jobs: int = 200, gpus: int = 160, level: str = "high",
             mix: tuple[float, float, float, float] | None = None) -> HareSpec:
        return HareSpec(jobs=jobs, gpus=gpus, heterogeneity_level=level, mix=mix,
                        total_tasks=round(50_000 * jobs / 300))

    for gpus in (100, 120, 140, 160, 180):
        yield "fig14-gpus", f"{gpus} GPUs", spec(gpus=gpus)
    for jobs in (100, 150, 200, 250, 300):
        yield "fig15-jobs", f"{jobs} jobs", spec(jobs=jobs)
    for level in ("low", "middle", "high"):
        yield "fig16-heterogeneity", level, spec(level=level)
    for label, mix in MIXES.items():
        yield "fig17-mix", label, spec(mix=mix)


def run(inst: Instance, method: str) -> dict[str, Any]:
    started = time.perf_counter()
    if method in OFFLINE:
        result = solve(inst, method)
    else:
        result, _ = run_policy(inst.with_mode("gang") if method in GANG else inst, method)
    metrics = result.metrics or {}
    return {"method": method, "objective": result.objective,
            "total_weighted_jct": metrics.get("total_weighted_jct"),
            "mean_jct": metrics.get("mean_jct"), "makespan": metrics.get("makespan"),
            "bound": result.bound, "wall_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--part", choices=("settings", "small", "all"), default="all")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.part in ("settings", "all"):
        path = args.out / "settings.jsonl"
        done = _done(path, ("figure", "cell", "seed", "method"))
        for figure, label, spec in cells():
            for seed in args.seeds:
                inst = generate_hare(spec, seed)
                for method in (*OFFLINE, *RELAXED, *GANG):
                    if (figure, label, seed, method) in done:
                        continue
                    row = {"figure": figure, "cell": label, "seed": seed, "jobs": inst.n_jobs,
                           "gpus": inst.n_gpus, "tasks": inst.n_tasks, **run(inst, method)}
                    _append(path, row)
                    print(f"{figure} {label} s{seed} {method}: weighted JCT "
                          f"{row['total_weighted_jct']:.0f} ({row['wall_s']:.1f} s)",
                          file=sys.stderr)
    if args.part in ("small", "all"):
        path = args.out / "small.jsonl"
        done = _done(path, ("instance", "method"))
        for folder in ("scaling", "exact"):
            for file in sorted((ROOT / "instances" / folder).glob("*-s*.json")):
                if folder == "exact" and "jobs10" not in file.name:
                    continue
                inst = load_instance(file).with_mode("relaxed")
                for method, params in (("hlas", {"mapping": "A"}), ("hlas", {"mapping": "B"}),
                                       ("hlas", {"mapping": "C"}), ("srtf", {}), ("homo", {}),
                                       ("allox", {})):
                    name = method + ("-" + params["mapping"] if params else "")
                    if (file.stem, name) in done:
                        continue
                    result, _ = run_policy(inst, method, params=params)
                    _append(path, {"instance": file.stem, "jobs": inst.n_jobs, "method": name,
                                   "objective": result.objective})
    return 0


def _done(path: Path, keys: tuple[str, ...]) -> set[tuple[Any, ...]]:
    if not path.exists():
        return set()
    return {tuple(json.loads(line)[k] for k in keys) for line in path.read_text().splitlines()}


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
