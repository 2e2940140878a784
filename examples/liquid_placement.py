"""Place a Liquid batch, then run Liquid's scheduler with and without its optimisations.

Part 1: five jobs (1 parameter server + 2 workers each) onto 5 hosts × 4 K80, placed by
Liquid's immediate best-fit, its batch genetic algorithm (GGA), the paper's baselines and the
exact CP-SAT model; every placement is checked and its cost recomputed in the paper's form.

Part 2: Liquid's cluster model (launch and save phases, GPU sharing, placement factors) on
20 jobs, most of them single-GPU, arriving every 20 s on 5 hosts × 2 T4 with 20 % error in
the predicted utilisation and memory; the scheduler runs plain, with GPU sharing, with
pre-scheduling, and with both.

    python examples/liquid_placement.py
"""

from __future__ import annotations

from optsched import LiquidSpec, generate_liquid
from optsched.online import simulate
from optsched.placement import PlacementSpec, check_placement, generate_placement, place


def placement() -> None:
    instance = generate_placement(PlacementSpec(jobs=5, hosts=5, gpus_per_host=4), seed=0)
    print(f"{'method':<8} {'cost':>7} {'bound':>7} {'hosts used':>10} {'runtime s':>10}")
    for method in ("bestfit", "gga", "random", "spread", "pack", "cpsat"):
        result = place(instance, method, seed=0, time_limit=20)
        placed = result.placement
        assert placed is not None and check_placement(instance, placed).feasible
        hosts = len({a.host for a in placed.assignments})
        bound = "-" if result.bound is None else f"{result.bound:.3f}"
        print(
            f"{method:<8} {result.objective:>7.3f} {bound:>7} {hosts:>10} "
            f"{result.runtime_s:>10.3f}"
        )


def scheduler() -> None:
    spec = LiquidSpec(jobs=20, hosts=5, distributed=0.3, interarrival=20, prediction_error=0.2)
    instance = generate_liquid(spec, seed=0)
    print(f"\n{'liquid with':<26} {'mean JCT s':>10} {'GPU idle s':>10} {'OOM failures':>12}")
    for label, params in (
        ("nothing", {}),
        ("sharing", {"share": "1"}),
        ("pre-scheduling", {"preschedule": "1"}),
        ("sharing + pre-scheduling", {"share": "1", "preschedule": "1"}),
    ):
        result = simulate(instance, "liquid", params=params, seed=0)
        assert result.extra["checked"]
        print(
            f"{label:<26} {result.metrics['mean_jct']:>10.1f} "
            f"{result.extra['gpu_idle_s']:>10.1f} {result.metrics['oom_failures']:>12}"
        )


if __name__ == "__main__":
    placement()
    scheduler()
