"""GPU types' busy shares over time (optsched.plot.type_busy) and their image."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from optsched import solve
from optsched.errors import InputError
from optsched.generate import GeneratorSpec, generate
from optsched.instance import GPU, Instance, Job
from optsched.plot import plot_type_busy, type_busy, type_busy_image
from optsched.schedule import Schedule, Task


def _union_length(spans: list[tuple[float, float]]) -> float:
    """The length of the union of ``spans``, by a sweep of its own (not the plot's merge)."""
    total, end = 0.0, -np.inf
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def _two_types(mode: str) -> tuple[Instance, Schedule]:
    """Type a (2 GPUs): job x on a0 over [0, 4); type b (1 GPU): job y on b0 over [0, 2)."""
    jobs = (
        Job("x", 0.0, 1.0, 1, 1, compute={"a": 4.0, "b": 8.0}),
        Job("y", 0.0, 1.0, 1, 1, compute={"a": 1.0, "b": 2.0}),
    )
    gpus = (GPU("a0", "a"), GPU("a1", "a"), GPU("b0", "b"))
    inst = Instance("two-types", jobs, gpus, mode=mode)
    tasks = (Task("x", 0, 0, "a0", 0.0), Task("y", 0, 0, "b0", 0.0))
    return inst, Schedule(inst.name, tasks)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_type_busy_shares_by_hand(mode):
    inst, schedule = _two_types(mode)
    edges, shares = type_busy(inst, schedule, windows=2)
    assert edges.tolist() == [0.0, 2.0, 4.0]
    assert list(shares) == ["a", "b"]  # the order the GPUs name the types
    assert shares["a"].tolist() == [0.5, 0.5]  # one of two GPUs busy throughout
    assert shares["b"].tolist() == [1.0, 0.0]


def test_type_busy_adds_up_to_the_work_done():
    """Windows times GPUs times shares give back every task's compute (relaxed mode, no
    sharing), and each share is in [0, 1]."""
    inst = generate(GeneratorSpec(jobs=8, gpus=6, gpu_types=3, hosts=2, load=2.0), 4)
    schedule = solve(inst, "priority-search", params={"steps": 30}).schedule
    edges, shares = type_busy(inst, schedule, windows=7)
    count = {t: sum(g.type == t for g in inst.gpus) for t in shares}
    total = sum(float((s * count[t] * np.diff(edges)).sum()) for t, s in shares.items())
    work = sum(inst.compute[inst.job_index[t.job], inst.gpu_index[t.gpu]] for t in schedule.tasks)
    assert total == pytest.approx(work, rel=1e-9)
    assert all(((s >= 0) & (s <= 1)).all() for s in shares.values())


def test_type_busy_refuses_bad_windows_and_draws():
    inst, schedule = _two_types("relaxed")
    for bad in (0, 2.5, True, 10_001):
        with pytest.raises(InputError, match="windows must be an integer in \\[1, 10000\\]"):
            type_busy(inst, schedule, windows=bad)  # type: ignore[arg-type]
    assert type_busy_image(inst, schedule, 4)[:8] == b"\x89PNG\r\n\x1a\n"
    edges, _ = type_busy(inst, schedule, windows=np.int64(2))  # numpy integers are integers
    assert edges.tolist() == [0.0, 2.0, 4.0]


def test_plot_type_busy_writes_and_a_format_that_cannot_be_drawn_is_bad_input(
    tmp_path, monkeypatch
):
    from optsched import plot

    inst, schedule = _two_types("relaxed")
    plot_type_busy(inst, schedule, tmp_path / "t.svg", windows=3)
    assert (tmp_path / "t.svg").read_text().lstrip().startswith("<?xml")

    def no_latex(*args, **kwargs):  # what savefig raises for PGF without LaTeX
        raise RuntimeError("xelatex not found")

    fig = plot._pyplot().figure()
    monkeypatch.setattr(fig, "savefig", no_latex)
    with pytest.raises(InputError, match="cannot draw a PGF image here: xelatex not found"):
        plot.render(fig, "pgf")


def test_type_busy_counts_a_shared_gpu_once():
    """Liquid with GPU sharing holds two tasks on one GPU at once: the GPU counts as busy
    once, so the shares add up to the union of each GPU's held intervals, none above 1."""
    from optsched.check import check
    from optsched.generate import LiquidSpec, generate_liquid
    from optsched.online.cluster import simulate_cluster
    from optsched.online.liquid import Liquid

    inst = generate_liquid(LiquidSpec(hosts=2, jobs=10, distributed=0.3, interarrival=5), 0)
    schedule = simulate_cluster(inst, Liquid(share=True, preschedule=True)).schedule
    timeline = check(inst, schedule).timeline
    held: dict[str, list[tuple[float, float]]] = {}
    for t in schedule.tasks:
        start, _, _, end = timeline[t.key]
        held.setdefault(t.gpu, []).append((start, end))
    overlaps = sum(
        c < b for spans in held.values() for (_, b), (c, _) in itertools.pairwise(sorted(spans))
    )
    assert overlaps > 0  # the case this test is about
    edges, shares = type_busy(inst, schedule, windows=9)
    count = {t: sum(g.type == t for g in inst.gpus) for t in shares}
    total = sum(float((s * count[t] * np.diff(edges)).sum()) for t, s in shares.items())
    assert total == pytest.approx(sum(_union_length(v) for v in held.values()), rel=1e-9)
    assert all(((s >= 0) & (s <= 1)).all() for s in shares.values())
    assert edges[0] == min(job.arrival for job in inst.jobs)
