"""Gantt charts and JCT CDFs (matplotlib, the optional ``plot`` extra, imported lazily)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optsched.check import check
from optsched.errors import InputError
from optsched.instance import Instance
from optsched.schedule import Schedule


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'optsched[plot]'") from None
    return plt


def plot_jct_cdf(jcts: Mapping[str, Sequence[float]], path: str | Path,
                 title: str = "") -> None:
    """Empirical CDFs of job completion times (C_j − a_j), one step curve per label, as the
    Hare paper's JCT CDFs draw them; saved to ``path``."""
    import numpy as np

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, values in jcts.items():
        x = np.sort(np.asarray(values, dtype=float))
        if len(x):
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
    ax.set_xlabel("job completion time (s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_gantt(instance: Instance, schedule: Schedule, path: str | Path) -> None:
    """Draw ``schedule`` as a Gantt chart, one row per GPU, and save it to ``path``.

    Bars show when a GPU is busy (relaxed: ``compute``; gang: the held interval), coloured by
    job and labelled ``job:round.task`` where they are wide enough; in relaxed mode a thin bar
    after each task shows its sync. Tasks on unknown or ineligible GPUs are left out; the title
    gives the checker's objective and the number of violations.
    """
    plt = _pyplot()
    report = check(instance, schedule)
    mode = report.mode
    cmap = plt.get_cmap("tab20")
    color = {job.id: cmap(i % 20) for i, job in enumerate(instance.jobs)}
    pace: dict[tuple[int, int], float] = {}
    for t in schedule.tasks:
        j, g = instance.job_index.get(t.job), instance.gpu_index.get(t.gpu)
        if j is not None and g is not None:
            key = (j, t.round)
            pace[key] = max(pace.get(key, 0.0), instance.compute[j, g] + instance.sync[j, g])
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * instance.n_gpus))
    end = 0.0
    for t in schedule.tasks:
        j, g = instance.job_index.get(t.job), instance.gpu_index.get(t.gpu)
        if j is None or g is None or instance.compute[j, g] == float("inf"):
            continue
        busy = instance.compute[j, g] if mode == "relaxed" else pace[j, t.round]
        ax.barh(g, busy, left=t.start, height=0.7, color=color[t.job], edgecolor="black",
                linewidth=0.5)
        if mode == "relaxed" and instance.sync[j, g] > 0:
            ax.barh(g + 0.4, instance.sync[j, g], left=t.start + busy, height=0.1,
                    color=color[t.job])
        ax.text(t.start + busy / 2, g, f"{t.job}:{t.round}.{t.task}", ha="center",
                va="center", fontsize=7, clip_on=True)
        end = max(end, t.start + busy + instance.sync[j, g])
    ax.set_yticks(range(instance.n_gpus), [f"{gpu.id} ({gpu.type})" for gpu in instance.gpus])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.02 or 1)
    ax.set_xlabel("time (s)")
    objective = "n/a" if report.objective is None else f"{report.objective:g}"
    ax.set_title(f"{instance.name} ({mode}): Σ w·C = {objective}, "
                 f"{len(report.violations)} violation(s)")
    if instance.n_jobs <= 20:
        handles = [plt.Rectangle((0, 0), 1, 1, color=color[job.id]) for job in instance.jobs]
        ax.legend(handles, [job.id for job in instance.jobs], loc="upper left",
                  bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
