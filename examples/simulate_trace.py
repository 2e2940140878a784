"""Simulate online policies on a Gavel trace, including a policy of your own.

Reads a Gavel trace (10-field TSV: job type, command, working directory, steps argument,
data-dir flag, total steps, scale factor, priority, SLO, arrival time). Without ``--trace``
it writes a small synthetic one in that format first: 60 single- and multi-GPU jobs of
Gavel's job types arriving as a Poisson process. The trace runs on 4 V100 + 4 P100 + 4 K80
with 360 s rounds (Gavel's round length) under Hare's HLAS (relaxed mode), Gavel's
FIFO, Tiresias (gang mode) and a policy defined below; every schedule is checked, and the
JCT distributions are drawn if matplotlib is installed.

    python examples/simulate_trace.py [--trace FILE] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from optsched.online import run_simulation, simulate
from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

JOB_TYPES = (
    "ResNet-18 (batch size 64)",
    "ResNet-50 (batch size 32)",
    "Transformer (batch size 64)",
    "LM (batch size 20)",
    "Recommendation (batch size 1024)",
    "CycleGAN",
    "A3C",
)


def synthetic_trace(path: Path, jobs: int = 60, seed: int = 0) -> None:
    """A Gavel-format trace: Poisson arrivals (mean 3 minutes), 1–4 GPUs, 2k–60k steps."""
    rng = np.random.default_rng(seed)
    arrival = 0.0
    lines = []
    for _ in range(jobs):
        job_type = JOB_TYPES[int(rng.integers(len(JOB_TYPES)))]
        scale = int(rng.choice([1, 1, 1, 2, 4]))
        steps = int(rng.integers(2_000, 60_000))
        lines.append(
            "\t".join(
                [
                    job_type,
                    "python train.py",
                    "workdir",
                    "--num_steps",
                    "1",
                    str(steps),
                    str(scale),
                    "1",
                    "-1",
                    f"{arrival:.0f}",
                ]
            )
        )
        arrival += float(rng.exponential(180.0))
    path.write_text("\n".join(lines) + "\n")


class LeastWorkFirst:
    """Gang mode, clairvoyant: the waiting job with the least work left (rounds left × its
    fastest round) starts first, on its fastest idle GPUs. A policy needs a ``name`` and
    ``decide(view)``, which yields ``(job, gpus)`` decisions."""

    name = "least-work-first"
    clairvoyant = True  # it reads view.oracle, which non-clairvoyant policies never get
    modes = frozenset({"gang"})

    def decide(self, view):
        def work_left(job):
            return (view.oracle.rounds(job) - job.rounds_done) * job.fastest

        idle = set(view.idle)
        for job in sorted(view.waiting, key=work_left):
            usable = sorted(
                (g for g in idle if np.isfinite(job.compute[g])), key=lambda g: (job.compute[g], g)
            )
            if len(usable) >= job.tasks_per_round:
                gpus = tuple(usable[: job.tasks_per_round])
                idle.difference_update(gpus)
                yield (job.index, gpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="a Gavel trace (default: a synthetic one)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(tempfile.mkdtemp()),
        help="folder for the synthetic trace and the plot",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.trace is None:
        args.trace = args.out / "synthetic.trace"
        synthetic_trace(args.trace)

    trace = read_trace(args.trace)
    cluster = parse_cluster("V100:4,P100:4,K80:4")
    mapping = TraceMapping(quantum=360.0)
    relaxed = trace_instance(trace, cluster, mapping, mode="relaxed")
    gang = trace_instance(trace, cluster, mapping, mode="gang")
    print(f"{trace.name}: {relaxed.n_jobs} jobs, {relaxed.n_tasks} tasks on {relaxed.n_gpus} GPUs")

    jcts = {}
    print(f"{'policy':<22} {'mode':<8} {'wJCT (h)':>9} {'mean JCT (h)':>13} {'makespan (h)':>13}")
    for policy, instance in (("hlas", relaxed), ("fifo-perf", gang), ("tiresias", gang)):
        result = simulate(instance, policy)
        sim = result.simulation
        assert result.extra["checked"]
        jcts[policy] = sim.completion - np.array([job.arrival for job in instance.jobs])
        m = result.metrics
        print(
            f"{policy:<22} {instance.mode:<8} {m['total_weighted_jct'] / 3600:>9.1f} "
            f"{m['mean_jct'] / 3600:>13.2f} {m['makespan'] / 3600:>13.2f}"
        )

    from optsched import check

    sim = run_simulation(gang, LeastWorkFirst())
    report = check(sim.instance, sim.schedule)  # the realised instance (no noise: the same)
    assert report.feasible
    jcts[LeastWorkFirst.name] = sim.completion - np.array([j.arrival for j in gang.jobs])
    m = report.metrics
    print(
        f"{LeastWorkFirst.name:<22} {'gang':<8} {m['total_weighted_jct'] / 3600:>9.1f} "
        f"{m['mean_jct'] / 3600:>13.2f} {m['makespan'] / 3600:>13.2f}"
    )

    try:
        from optsched.plot import plot_jct_cdf

        plot_jct_cdf(
            {k: list(v / 3600) for k, v in jcts.items()},
            args.out / "jct-cdf.png",
            title="JCT",
            unit="h",
            log=True,
        )
        print(f"JCT CDFs: {args.out / 'jct-cdf.png'}")
    except ImportError:  # matplotlib is an optional extra
        pass


if __name__ == "__main__":
    main()
