"""Task moves at the Hare paper's scale: how much ``task-search`` adds to a schedule.

Usage: python benchmarks/task_search.py --mode relaxed|gang [--seconds 30] --out FILE.jsonl

On three paper-scale instances (hare-jobs at 100 jobs, hare-gpus at 100 GPUs, the hare-mix
1:1:1:2 setting; seed 0), one JSON line per instance: ``task-search`` for ``seconds`` from ECT;
``priority-search`` for ``seconds``; then ``task-search`` for ``seconds`` polishing that
schedule (given as its hint). Each line has the objectives, the steps and improvements of the
task search and its steps per second. ``python benchmarks/task_search.py --summary FILE...``
prints the Markdown table of ``benchmarks/results/task-search/summary.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from optsched import solve
from optsched.io import load_instance
from optsched.output import json_text, output_target, write_file

INSTANCES = (
    "hare-jobs/hare-jobs-jobs100-s0",
    "hare-gpus/hare-gpus-gpus100-s0",
    "hare-mix/hare-mix-mix1-1-1-2-s0",
)


def measure(mode: str, seconds: float) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name in INSTANCES:
        inst = load_instance(Path("instances") / f"{name}.json").with_mode(mode)
        ect = solve(inst, "ect")
        alone = solve(inst, "task-search", time_limit=seconds)
        search = solve(inst, "priority-search", time_limit=seconds)
        polish = solve(inst, "task-search", time_limit=seconds, hint=search.schedule)
        rows.append(
            {
                "instance": inst.name,
                "mode": mode,
                "seconds": seconds,
                "tasks": inst.n_tasks,
                "ect": ect.objective,
                "task_search": alone.objective,
                "priority_search": search.objective,
                "polished": polish.objective,
                **{
                    f"{key}_{which}": run.extra[key]
                    for which, run in (("alone", alone), ("polish", polish))
                    for key in ("steps", "improvements", "stopped")
                },
                "steps_per_s_alone": alone.extra["steps"] / alone.runtime_s,
                "steps_per_s_polish": polish.extra["steps"] / polish.runtime_s,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def summary(files: list[str]) -> str:
    rows = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()]
    out = [
        "| instance | mode | tasks | ECT | task-search from ECT | priority-search | "
        "+ task-search | steps/s (alone, polish) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def pct(value: float, base: float) -> str:
            return f"{value:,.1f} ({100 * (value - base) / base:+.3f} %)"

        out.append(
            f"| {r['instance']} | {r['mode']} | {r['tasks']:,} | {r['ect']:,.1f} | "
            f"{pct(r['task_search'], r['ect'])} | {r['priority_search']:,.1f} | "
            f"{pct(r['polished'], r['priority_search'])} | "
            f"{r['steps_per_s_alone']:.0f}, {r['steps_per_s_polish']:.0f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("relaxed", "gang"))
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out")
    parser.add_argument("--summary", nargs="+")
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary), end="")
        return
    if not args.mode or not args.out:
        parser.error("--mode and --out are required to measure")
    output_target(args.out)
    rows = measure(args.mode, args.seconds)
    write_file(args.out, "".join(json_text(r, indent=None) for r in rows))


if __name__ == "__main__":
    main()
