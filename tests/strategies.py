"""Hypothesis strategies: small random instances in both modes."""

from __future__ import annotations

from hypothesis import strategies as st

from optsched.instance import GPU, Instance, Job


@st.composite
def instances(draw: st.DrawFn, *, mode: str | None = None, max_jobs: int = 4,
              max_gpus: int = 4, max_rounds: int = 3, max_k: int = 3,
              integer: bool | None = None, positive_sync: bool = False) -> Instance:
    """A small instance: 1-4 jobs, 1-4 GPUs of 1-3 types, arrivals, weights, sync
    (every sync > 0 with ``positive_sync``)."""
    n_gpus = draw(st.integers(1, max_gpus))
    n_types = draw(st.integers(1, min(3, n_gpus)))
    types = [f"T{t}" for t in range(n_types)]
    gpu_types = [types[t] for t in range(n_types)] + [
        draw(st.sampled_from(types)) for _ in range(n_gpus - n_types)]
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(gpu_types))
    mode = mode or draw(st.sampled_from(["relaxed", "gang"]))
    integer = draw(st.booleans()) if integer is None else integer
    time = (st.integers(1, 9).map(float) if integer
            else st.floats(0.1, 9.0, allow_nan=False).map(lambda x: round(x, 3)))
    low = 1 if positive_sync else 0
    sync = (st.integers(low, 3).map(float) if integer
            else st.floats(low / 10, 3.0, allow_nan=False).map(lambda x: round(x, 3)))
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        eligible = draw(st.lists(st.sampled_from(types), min_size=1, unique=True))
        k_max = sum(gpu_types.count(t) for t in eligible) if mode == "gang" else max_k
        jobs.append(Job(
            id=f"j{j}",
            arrival=draw(st.integers(0, 6).map(float)),
            weight=draw(st.integers(1, 3).map(float)),
            rounds=draw(st.integers(1, max_rounds)),
            tasks_per_round=draw(st.integers(1, min(max_k, k_max))),
            compute={t: draw(time) for t in eligible},
            sync={t: draw(sync) for t in eligible},
        ))
    return Instance("hyp", tuple(jobs), gpus, mode=mode)
