"""Gantt charts, GPU types' busy shares over time and JCT CDFs (matplotlib, the optional
``plot`` extra, imported lazily).

The image format follows the output's extension (``.png``, ``.svg``, ``.pdf``, …; none: PNG);
an extension matplotlib cannot write is bad input listing those it can. Images are rendered in
memory and written through :mod:`optsched.output` (atomic; devices written through).
"""

from __future__ import annotations

import io
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from optsched.check import CheckReport, check
from optsched.errors import InputError
from optsched.instance import Instance
from optsched.metrics import union
from optsched.output import write_file
from optsched.schedule import Schedule, Task


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plotting needs matplotlib: pip install 'optsched[plot]'") from None
    return plt


def image_format(path: str | Path, option: str = "--out") -> str:
    """The image format for ``path``: its extension, PNG without one. An extension that
    matplotlib cannot write raises :class:`InputError` naming ``option`` and listing the
    supported formats."""
    _pyplot()
    from matplotlib.backend_bases import FigureCanvasBase

    supported = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return "png"
    if suffix not in supported:
        raise InputError(
            f"{option} {str(path)!r}: cannot write .{suffix} images (supported: "
            f"{', '.join(sorted(supported))})"
        )
    return suffix


def render(fig: Any, fmt: str) -> bytes:
    """The figure as an image of format ``fmt``, closed afterwards."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=120)
    except RuntimeError as err:  # e.g. PGF without a LaTeX installation
        raise InputError(f"cannot draw a {fmt.upper()} image here: {err}") from None
    finally:
        _pyplot().close(fig)
    return buf.getvalue()


def plot_jct_cdf(
    jcts: Mapping[str, Sequence[float]],
    path: str | Path,
    title: str = "",
    rhos: Mapping[str, Sequence[float]] | None = None,
    *,
    unit: str = "s",
    log: bool = False,
) -> None:
    """Empirical CDFs of job completion times (C_j − a_j), one step curve per label, as the
    Hare paper's JCT CDFs draw them, with the 50th/95th/99th percentiles marked; with
    ``rhos``, a second panel of the finish-time fairness ratios ρ_j (optsched.fairness) and
    ρ = 1 marked. ``unit``: the unit the times are in, for the axis (``s``, ``h``, …);
    ``log``: a logarithmic time axis (JCTs of traces span minutes to weeks). Saved to
    ``path``."""
    write_file(path, jct_cdf_image(jcts, image_format(path), title, rhos, unit=unit, log=log))


def jct_cdf_image(
    jcts: Mapping[str, Sequence[float]],
    fmt: str = "png",
    title: str = "",
    rhos: Mapping[str, Sequence[float]] | None = None,
    *,
    unit: str = "s",
    log: bool = False,
) -> bytes:
    """:func:`plot_jct_cdf`'s chart as image bytes of format ``fmt``."""
    import numpy as np

    plt = _pyplot()
    panels = 2 if rhos else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    ax = axes[0][0]
    for label, values in jcts.items():
        x = np.sort(np.asarray(values, dtype=float))
        if len(x):
            (line,) = ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
            for q in (50, 95, 99):
                ax.plot(np.percentile(x, q), q / 100, "o", color=line.get_color(), ms=3)
    ax.set_xlabel(f"job completion time ({unit}); dots: p50, p95, p99")
    if log:
        ax.set_xscale("log")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    if title:
        ax.set_title(title)
    if rhos:
        right = axes[0][1]
        for label, values in rhos.items():
            x = np.sort(np.asarray(values, dtype=float))
            if len(x):
                right.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label)
        right.axvline(1.0, color="grey", lw=0.8, ls="--")
        right.set_xlabel("finish-time fairness ρ (≤ 1: at least its fair share)")
        right.set_ylim(0, 1.02)
        right.grid(alpha=0.3)
    fig.tight_layout()
    return render(fig, fmt)


def plot_gantt(instance: Instance, schedule: Schedule, path: str | Path) -> None:
    """Draw ``schedule`` as a Gantt chart, one row per GPU, and save it to ``path``.

    Bars show when a GPU is busy computing (relaxed: ``compute``; gang: the held interval;
    cluster instances: training, with the launch and save phases around it drawn pale), as
    the checker computed them, coloured by job and labelled ``job:round.task`` where they are
    wide enough; tasks that hold a GPU at once (GPU sharing, pre-scheduling) get lanes of their
    own. A failed attempt (``failed_at``: out of GPU memory) is a hatched bar up to its
    failure, labelled ``OOM``. In relaxed mode a thin bar after each task shows its sync. Tasks
    on unknown or ineligible GPUs are left out; the title gives the checker's objective and the
    number of violations.
    """
    write_file(path, gantt_image(instance, schedule, image_format(path)))


def _phases(report: CheckReport, task: Task) -> tuple[float, float, float, float] | None:
    """``task``'s (start, training start, training end, end of its hold) as the checker
    computed them; a failed attempt's all end at its failure; None for a task on an unknown
    or ineligible GPU."""
    if task.failed_at is not None:
        return (task.start, task.failed_at, task.failed_at, task.failed_at)
    return report.timeline.get(task.key)


def gantt_image(instance: Instance, schedule: Schedule, fmt: str = "png") -> bytes:
    """:func:`plot_gantt`'s chart as image bytes of format ``fmt``."""
    plt = _pyplot()
    report = check(instance, schedule)
    mode = report.mode
    cmap = plt.get_cmap("tab20")
    color = {job.id: cmap(i % 20) for i, job in enumerate(instance.jobs)}
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * instance.n_gpus))
    end = 0.0
    placed = []  # (task, job index, GPU index, phases, lane)
    lanes: dict[int, list[float]] = {}  # per GPU: when each lane is free again
    for t in sorted(schedule.tasks, key=lambda t: t.start):
        j, g = instance.job_index.get(t.job), instance.gpu_index.get(t.gpu)
        phases = _phases(report, t)
        if j is None or g is None or phases is None:
            continue
        free = lanes.setdefault(g, [])
        lane = next((k for k, f in enumerate(free) if f <= phases[0] + 1e-9), len(free))
        free[lane : lane + 1] = [phases[3]]
        placed.append((t, j, g, phases, lane))
    for t, j, g, (start, train, trained, held), lane in placed:
        height = 0.7 / len(lanes[g])
        y = g - 0.35 + height * (lane + 0.5)
        if t.failed_at is not None:
            ax.barh(
                y,
                held - start,
                left=start,
                height=height,
                color=color[t.job],
                alpha=0.3,
                hatch="xx",
                edgecolor="black",
                linewidth=0.5,
            )
            ax.text(
                (start + held) / 2, y, "OOM", ha="center", va="center", fontsize=7, clip_on=True
            )
            end = max(end, held)
            continue
        for a, b, alpha in ((start, train, 0.3), (trained, held, 0.3), (train, trained, 1.0)):
            if b > a:
                ax.barh(
                    y,
                    b - a,
                    left=a,
                    height=height,
                    color=color[t.job],
                    alpha=alpha,
                    edgecolor="black",
                    linewidth=0.5,
                )
        sync = float(instance.sync[j, g]) if mode == "relaxed" else 0.0
        if sync > 0:
            ax.barh(g + 0.4, sync, left=trained, height=0.1, color=color[t.job])
        ax.text(
            (train + trained) / 2,
            y,
            f"{t.job}:{t.round}.{t.task}",
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
        )
        end = max(end, held + sync)
    ax.set_yticks(range(instance.n_gpus), [f"{gpu.id} ({gpu.type})" for gpu in instance.gpus])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.02 or 1)
    ax.set_xlabel("time (s)")
    objective = "n/a" if report.objective is None else f"{report.objective:g}"
    ax.set_title(
        f"{instance.name} ({mode}): Σ w·C = {objective}, {len(report.violations)} violation(s)"
    )
    if instance.n_jobs <= 20:
        handles = [plt.Rectangle((0, 0), 1, 1, color=color[job.id]) for job in instance.jobs]
        ax.legend(
            handles,
            [job.id for job in instance.jobs],
            loc="upper left",
            bbox_to_anchor=(1.01, 1),
            fontsize=8,
            frameon=False,
        )
    fig.tight_layout()
    return render(fig, fmt)


#: Windows :func:`type_busy` draws by default, and the most it draws (more than a picture can
#: show).
WINDOWS = 50
MAX_WINDOWS = 10_000


def type_busy(
    instance: Instance, schedule: Schedule, windows: int = WINDOWS
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The share of each GPU type's time that its GPUs are busy (relaxed mode: computing;
    gang mode and cluster instances: held, launch and save included; a failed attempt up to
    its failure) in each of ``windows`` equal windows from the first arrival to the last
    moment a GPU is busy, as the checker computed the times. A GPU that holds two tasks at
    once (GPU sharing) counts once. Returns the ``windows`` + 1 window edges (seconds) and the
    shares (in [0, 1]) by type, in the order the instance's GPUs first name them. Tasks on
    unknown or ineligible GPUs are left out, as in the Gantt chart.

    Raises
    ------
    InputError
        ``windows`` not an integer in [1, :data:`MAX_WINDOWS`].
    """
    _check_windows(windows)
    return _type_busy(instance, schedule, int(windows), check(instance, schedule))


def _check_windows(windows: object) -> None:
    """An InputError unless ``windows`` is an integer in [1, :data:`MAX_WINDOWS`]."""
    if (
        isinstance(windows, bool)
        or not isinstance(windows, numbers.Integral)
        or not 1 <= int(windows) <= MAX_WINDOWS
    ):
        raise InputError(f"windows must be an integer in [1, {MAX_WINDOWS}], got {windows!r}")


def _type_busy(
    instance: Instance, schedule: Schedule, windows: int, report: CheckReport
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """:func:`type_busy` from the checker's ``report`` on ``schedule``."""
    busy: dict[int, list[tuple[float, float]]] = {}
    for t in schedule.tasks:
        g = instance.gpu_index.get(t.gpu)
        phases = _phases(report, t)
        if g is not None and phases is not None and phases[3] > phases[0]:
            busy.setdefault(g, []).append((phases[0], phases[3]))
    first = min(job.arrival for job in instance.jobs)
    last = max((b for spans in busy.values() for _, b in spans), default=first)
    edges = np.linspace(first, last if last > first else first + 1.0, windows + 1)
    count: dict[str, int] = {}
    used: dict[str, np.ndarray] = {}
    for g, gpu in enumerate(instance.gpus):
        count[gpu.type] = count.get(gpu.type, 0) + 1
        row = used.setdefault(gpu.type, np.zeros(windows))
        for a, b in union(busy.get(g, [])):
            lo = max(0, int(np.searchsorted(edges, a, "right")) - 1)  # the windows it meets
            hi = int(np.searchsorted(edges, b, "left"))
            part = np.minimum(b, edges[lo + 1 : hi + 1]) - np.maximum(a, edges[lo:hi])
            row[lo:hi] += np.clip(part, 0.0, None)
    width = np.diff(edges)
    return edges, {k: np.clip(used[k] / (count[k] * width), 0.0, 1.0) for k in used}


def plot_type_busy(
    instance: Instance, schedule: Schedule, path: str | Path, windows: int = WINDOWS
) -> None:
    """Draw :func:`type_busy_image` and save it to ``path`` (its extension picks the format)."""
    write_file(path, type_busy_image(instance, schedule, windows, image_format(path)))


def type_busy_image(
    instance: Instance, schedule: Schedule, windows: int = WINDOWS, fmt: str = "png"
) -> bytes:
    """:func:`type_busy` drawn as one step line per GPU type (percent busy over time since
    the first arrival), as image bytes of format ``fmt``: where a Gantt chart of hundreds of
    GPUs shows nothing, this shows which types a schedule leaves idle, and when. The title
    gives the checker's objective and its number of violations, as the Gantt chart's does: an
    infeasible schedule is drawn too (busy time before the first arrival falls outside the
    windows)."""
    plt = _pyplot()
    _check_windows(windows)
    windows = int(windows)
    report = check(instance, schedule)
    edges, shares = _type_busy(instance, schedule, windows, report)
    fig, ax = plt.subplots(figsize=(9, 4))
    x = edges - edges[0]
    counts = {t: sum(gpu.type == t for gpu in instance.gpus) for t in shares}
    for kind, share in shares.items():
        ax.stairs(100 * share, x, label=f"{kind} ({counts[kind]} GPUs)", linewidth=1.5)
    ax.set_xlim(0, x[-1])
    ax.set_ylim(0, 105)
    ax.set_xlabel("time since the first arrival (s)")
    ax.set_ylabel(f"busy (% of the type's GPU time, {windows} windows)")
    objective = "n/a" if report.objective is None else f"{report.objective:g}"
    ax.set_title(
        f"{instance.name} ({report.mode}): Σ w·C = {objective}, "
        f"{len(report.violations)} violation(s)"
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return render(fig, fmt)
