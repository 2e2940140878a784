"""Fingerprints of optsched's behaviour, to show that a refactoring changed nothing.

Runs every deterministic built-in method on fixed seeded instances and records, per run, a
digest of its checked solution (every task's job, round, task, GPU and start, or every
container's host and GPUs) with its status and objective; exact methods on tiny instances
record their proved optimum. Run it on two commits and compare:

    python benchmarks/fingerprints.py before.json          # on the old commit
    python benchmarks/fingerprints.py after.json           # on the new one
    python benchmarks/fingerprints.py --compare before.json after.json

``--compare`` lists every run whose fingerprint differs (exit 1 if any). The script imports the
verbs by their current names and falls back to the names of releases before the runtime split
(``optsched.online.run_policy``, ``optsched.placement.place``), so that it runs on both sides.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any


def digest(result: Any) -> str:
    """Status, objective and a hash of the solution of ``result``."""
    sol = result.solution
    if sol is None:
        body = None
    elif hasattr(sol, "tasks"):
        body = sorted((t.job, t.round, t.task, t.gpu, repr(t.start)) for t in sol.tasks)
    else:
        body = sorted((a.job, a.container, a.host, tuple(a.gpus)) for a in sol.assignments)
    text = json.dumps([str(result.status), repr(result.objective), body])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprints() -> dict[str, str]:
    from optsched import GeneratorSpec, LiquidSpec, generate, generate_liquid, solve
    from optsched.placement import PlacementSpec, generate_placement

    try:
        from optsched import place, simulate
    except ImportError:  # before the runtime split
        from optsched.online import run_policy as simulate  # type: ignore[attr-defined]
        from optsched.placement import place

    out: dict[str, str] = {}

    def run(key: str, call: Any, exact: bool = False) -> None:
        try:
            result = call()
        except Exception as exc:  # a refusal is behaviour too
            out[key] = f"error {type(exc).__name__}: {exc}"
            return
        out[key] = (
            f"{result.status} {result.objective!r}"
            if exact
            else f"{digest(result)} bound={result.bound!r}"
        )

    for mode in ("relaxed", "gang"):
        for seed in range(3):
            inst = generate(GeneratorSpec(jobs=6, gpus=4, mode=mode), seed)
            for m in (
                "ect",
                "hare",
                "hare-ect",
                "hare-lp",
                "hare-lp-ect",
                "fluid-bound",
                "capacity-bound",
                "lp-bound",
            ):
                run(f"solve {m} {mode} {seed}", lambda m=m, inst=inst: solve(inst, m))
            tiny = generate(GeneratorSpec(jobs=3, gpus=2, mode=mode), seed)
            for m in ("cpsat", "milp-highs"):
                run(
                    f"solve {m} {mode} {seed}",
                    lambda m=m, tiny=tiny: solve(tiny, m, time_limit=60),
                    exact=True,
                )
            big = generate(GeneratorSpec(jobs=30, gpus=8, mode=mode), seed)
            for p in ("hlas", "fifo-perf", "fifo-random", "tiresias", "srtf", "homo", "allox"):
                run(
                    f"simulate {p} {mode} {seed}",
                    lambda p=p, big=big, seed=seed: simulate(big, p, seed=seed),
                )
    for seed in range(3):
        liquid = generate_liquid(LiquidSpec(hosts=5, jobs=12), seed)
        for params in (
            {},
            {"share": "1", "preschedule": "1"},
            {"placement": "gga", "batch": "5", "cost": "code"},
            {"placement": "random"},
            {"gates": "code", "share": "1"},
            {"line18": "1"},
        ):
            run(
                f"liquid {params} {seed}",
                lambda params=params, liquid=liquid, seed=seed: simulate(
                    liquid, "liquid", params=params, seed=seed
                ),
            )
        batch = generate_placement(PlacementSpec(jobs=4, hosts=5), seed)
        for m in ("bestfit", "random", "spread", "pack", "gga"):
            params = {"generations": "20"} if m == "gga" else None
            run(
                f"place {m} {seed}",
                lambda m=m, params=params, batch=batch, seed=seed: place(
                    batch, m, seed=seed, params=params
                ),
            )
        small = generate_placement(PlacementSpec(jobs=2, hosts=3), seed)
        for m in ("cpsat", "milp-highs"):
            run(
                f"place {m} {seed}",
                lambda m=m, small=small, seed=seed: place(small, m, seed=seed, time_limit=60),
                exact=True,
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="write the fingerprints here (JSON)")
    parser.add_argument(
        "--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two fingerprint files"
    )
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        for key in differ:
            print(f"{key}: {before.get(key)} -> {after.get(key)}")
        print(f"{len(before)} runs before, {len(after)} after, {len(differ)} differ")
        return 1 if differ else 0
    if not args.out:
        parser.error("give an output file, or --compare BEFORE AFTER")
    from optsched.output import json_text, write_file

    prints = fingerprints()
    write_file(args.out, json_text(dict(sorted(prints.items()))))
    print(f"{len(prints)} fingerprints written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
