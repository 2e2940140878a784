"""Liquid's scheduler (TPDS'22 §5–§6) as a cluster policy.

Jobs wait in arrival order. Each decision (see :mod:`optsched.online.cluster`):

1. **Placement** of the waiting jobs on the vacant GPUs with a registered ``place`` method on
   the instance's topology (PS/worker containers of one GPU each, the job's predicted GPU
   memory and bandwidth weight, Liquid's default 1 unless given): in **immediate** mode
   (``batch`` = 0) each job at once, in arrival order, skipping jobs that do not fit (Liquid
   retries them); in **batch** mode every ``batch`` seconds the waiting jobs together,
   dropping the latest-arrived job until the batch fits (Liquid drops one at random; the
   batch starts as the longest arrival-order prefix that has enough vacant GPUs).
   ``placement`` = ``bestfit`` (Liquid's immediate mode), ``gga`` (its batch mode), or the
   baselines ``random``, ``spread``, ``pack``; the method's own parameters (the cost form,
   best-fit's and GGA's ``line18``, GGA's ``repair``, ``fitness``, ``generations``,
   ``patience``) are passed through, so a result's params say which variant ran.
2. **GPU sharing** (``share``) and **pre-scheduling** (``preschedule``) serve single-task
   jobs, under one of two *gates* (``gates``):

   - ``paper`` (default; §6.1–6.2 give the mechanisms but no thresholds, so this is our
     reading): after the placement step, for the single-task jobs that no vacant GPU can
     take. Sharing puts the job on the held GPU of least predicted utilisation among those
     whose rounds are all single-task, whose predicted utilisations plus the job's stay within
     the instance's ``share_cap`` (§6.2: "the sum ... does not exceed the upper limit") and
     whose predicted GPU memory fits; otherwise pre-scheduling starts it on the GPU held by
     exactly one round that *trains* and is predicted to finish training within the job's
     launch phase + 15 s (Liquid's ``PreScheduleExtraTime``), the earliest such GPU.
   - ``code`` (the reference implementation, ``resource_pool.go``): sharing is tried
     *before* the vacant GPUs, for every waiting single-task job, once the load ratio (GPUs
     not known vacant / all GPUs) is at least ``share_ratio`` (default 0.75, the released
     share experiment's ``pool.share.enable_threshold``), on the first qualifying GPU in index
     order, with a strict cap (Σ predicted utilisation < ``share_cap``, Liquid's 1.3) and
     strict memory; pre-scheduling serves the jobs no vacant GPU can take once the load ratio
     is at least ``preschedule_ratio`` (default 0.5, the released pre-scheduling experiment's
     ``pool.pre_schedule.enable_threshold``), and a GPU whose one round is saving qualifies
     too (the code tests no phase).

   A pre-scheduled job launches at once and trains when the GPU is vacant for it. The
   training end it plans on is a *prediction* (Liquid §6.1 estimates phase times with a
   model): the true end plus ε·T, T the holder's profiled compute time per task on that GPU
   and ε ~ N(0, ``end_error``) drawn once per (instance name, job), reproducibly (the same
   for every ``--seed``); ``end_error`` = 0 is an oracle. A job whose round ran out of GPU
   memory (its actual memory exceeded the prediction, cluster.py) is neither shared nor
   pre-scheduled again: it waits for a vacant GPU, as §6.2's remedy (limit the job's GPU
   memory) presumes a job known to overrun.

``heartbeat`` > 0 turns event-driven reporting off: freed GPUs become known only at the next
heartbeat (Liquid's agents report every 5 s).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from optsched.errors import InputError
from optsched.instance import Instance
from optsched.limits import MAX_START, MAX_VALUE
from optsched.online.cluster import ClusterJob, ClusterView, Holding
from optsched.online.engine import Start
from optsched.options import MIN_PERIOD, Options, choice, group, number, period, switch
from optsched.placement.cost import CostOptions
from optsched.placement.gga import GgaOptions
from optsched.placement.model import Container, PlacementInstance, PlacementJob
from optsched.placement.run import place
from optsched.registry import get_method, register
from optsched.topology import Topology

PRESCHEDULE_EXTRA = 15.0  # s, Liquid's PreScheduleExtraTime
_UNLIMITED = 1e15  # MB: GPU memory of GPUs without a limit, for the placement model
PlacementName = Literal["bestfit", "gga", "random", "spread", "pack"]
PLACEMENTS: tuple[PlacementName, ...] = ("bestfit", "gga", "random", "spread", "pack")
GATES: tuple[Literal["paper", "code"], ...] = ("paper", "code")
#: The released experiments' load-ratio thresholds (PasaLab/Liquid @ 2e70203,
#: ``Liquid-experiments/share/launcher.py`` and ``pre_schedule/launcher.py``).
CODE_SHARE_RATIO, CODE_PRESCHEDULE_RATIO = 0.75, 0.5


@dataclass
class Liquid:
    """Liquid's scheduler; every switch is separate so its effect can be measured.
    ``placement`` names the placement method (kind ``place``) and ``place_options`` are its
    own options (an instance of its options class; None: its defaults), handed to it as they
    are."""

    placement: str = "bestfit"
    batch: float = 0.0
    share: bool = False
    preschedule: bool = False
    heartbeat: float = 0.0
    place_options: CostOptions | None = None
    gates: str = "paper"
    share_ratio: float = CODE_SHARE_RATIO
    preschedule_ratio: float = CODE_PRESCHEDULE_RATIO
    end_error: float = 0.0
    name: str = "liquid"
    execution = "cluster"  # its execution model (optsched.online.cluster)

    def __post_init__(self) -> None:
        for key in ("batch", "heartbeat"):
            value = getattr(self, key)
            if not (value == 0 or MIN_PERIOD <= value <= MAX_VALUE):
                raise InputError(
                    f"{key} must be 0 (off) or in [{MIN_PERIOD:g}, {MAX_VALUE:g}] s, got {value!r}"
                )
        if self.gates not in GATES:
            raise InputError(f"gates must be one of {GATES}, got {self.gates!r}")
        for key in ("share_ratio", "preschedule_ratio"):
            if not 0 <= getattr(self, key) <= 1:
                raise InputError(f"{key} must be in [0, 1], got {getattr(self, key)!r}")
        if not 0 <= self.end_error <= 10:
            raise InputError(f"end_error must be in [0, 10], got {self.end_error!r}")
        own = _options_class(self.placement)
        if self.place_options is None:
            self.place_options = own()
        elif type(self.place_options) is not own:
            raise InputError(
                f"placement={self.placement} takes {own.__name__}, not "
                f"{type(self.place_options).__name__}"
            )

    @property
    def settings(self) -> dict[str, object]:
        """Every setting the run used, defaults included (a result says which variant ran:
        cost form, ``line18``, gates)."""
        shown = ("cost", "line18", "repair", "fitness")  # always, the others when set
        options = self.place_options or CostOptions()
        every = options.to_params(list(options.keys()))
        return {
            "placement": self.placement,
            "batch": self.batch,
            "share": self.share,
            "preschedule": self.preschedule,
            "heartbeat": self.heartbeat,
            "gates": self.gates,
            "share_ratio": self.share_ratio,
            "preschedule_ratio": self.preschedule_ratio,
            "end_error": self.end_error,
            "place_params": {
                **{k: v for k, v in every.items() if k in shown},
                **options.to_params(),
            },
        }

    @property
    def tick(self) -> float | None:
        return self.heartbeat or None

    @property
    def event_driven(self) -> bool:
        return self.heartbeat == 0

    def decide(self, view: ClusterView) -> list[Start]:
        if view.time > MAX_START and (self.batch or self.heartbeat):
            raise InputError(
                f"batch={self.batch:g} / heartbeat={self.heartbeat:g} "
                f"(--param) delay round starts past {MAX_START:g} s "
                f"(t={view.time:g}); use shorter periods"
            )
        if self.batch:  # decide at multiples of the batch interval only
            k = round(view.time / self.batch)
            if abs(view.time - k * self.batch) > 1e-9 * max(1.0, view.time):
                view.wake((math.floor(view.time / self.batch) + 1) * self.batch)
                return []
            view.wake((k + 1) * self.batch)  # for the jobs this batch leaves waiting
        inst = view.instance
        vacant = set(view.vacant)
        holders = [list(h) for h in view.holders]
        waiting = list(view.waiting)
        out: list[Start] = []
        code = self.gates == "code"
        if self.share and code and _load_ratio(holders, vacant) >= self.share_ratio:
            for job in waiting:  # the code's first round: sharing before the vacant GPUs
                g = (
                    self._share(view, job, holders)
                    if job.tasks_per_round == 1 and not job.failures
                    else None
                )
                if g is not None:
                    out.append(Start(job.index, (g,), True))
                    holders[g].append(Holding(job, 1, True))
            shared = {j for j, _, _ in out}
            waiting = [job for job in waiting if job.index not in shared]
        placed = self._placements(view, waiting, vacant) if vacant and waiting else []
        out += placed
        if not (self.share or self.preschedule):
            return out
        for j, gpus, _ in placed:
            job = next(w for w in waiting if w.index == j)
            for g in gpus:
                holders[g].append(Holding(job, len(gpus), False))
        vacant -= {g for _, gpus, _ in placed for g in gpus}
        done = {j for j, _, _ in out}
        for job in waiting:
            if (
                job.index in done
                or job.tasks_per_round != 1
                or job.failures
                or any(_fits(inst, job, g) for g in vacant)
            ):
                continue
            where = self._share(view, job, holders) if self.share and not code else None
            share = where is not None
            if (
                where is None
                and self.preschedule
                and (not code or _load_ratio(holders, vacant) >= self.preschedule_ratio)
            ):
                where = self._preschedule(view, job, holders)
            if where is not None:
                out.append(Start(job.index, (where,), share))
                holders[where].append(Holding(job, 1, share))
        return out

    def _placements(
        self, view: ClusterView, waiting: list[ClusterJob], vacant: set[int]
    ) -> list[Start]:
        """Immediate mode: each waiting job in turn; batch mode: the waiting jobs together."""
        if not self.batch:
            out: list[Start] = []
            free = set(vacant)
            for job in waiting:
                placed = self._place(view, [job], free)
                if placed:
                    out += placed
                    free -= set(placed[0][1])
            return out
        batch, gpus = [], 0
        for job in waiting:  # the arrival-order prefix that has enough vacant GPUs
            gpus += job.tasks_per_round
            if gpus > len(vacant):
                break
            batch.append(job)
        while batch:
            placed = self._place(view, batch, vacant)
            if placed is not None:
                return placed
            batch.pop()
        return []

    def _shareable(
        self, inst: Instance, job: ClusterJob, g: int, holders: list[list[Holding]]
    ) -> bool:
        """Whether ``job`` may share GPU ``g`` on its predictions (strict bounds under the
        code's gates, as ``resource_pool.go`` compares)."""
        rounds = holders[g]
        cap = inst.cluster.share_cap
        if cap is None or not rounds or any(h.tasks > 1 for h in rounds):
            return False
        if not np.isfinite(job.compute[g]):
            return False
        load = job.util + sum(h.job.util for h in rounds)
        memory = job.gpu_memory + sum(h.job.gpu_memory for h in rounds)
        limit = inst.gpus[g].memory
        if self.gates == "code":
            return load < cap and (limit is None or memory < limit)
        return load <= cap + 1e-9 and (limit is None or memory <= limit + 1e-9)

    def _share(
        self, view: ClusterView, job: ClusterJob, holders: list[list[Holding]]
    ) -> int | None:
        """The GPU ``job`` shares: the least utilised qualifying one (paper gates) or the
        first in index order (code gates)."""
        options = [
            g for g in range(len(holders)) if self._shareable(view.instance, job, g, holders)
        ]
        if self.gates == "code":
            return options[0] if options else None
        return min(options, key=lambda g: (sum(h.job.util for h in holders[g]), g), default=None)

    def _preschedule(
        self, view: ClusterView, job: ClusterJob, holders: list[list[Holding]]
    ) -> int | None:
        """The GPU to pre-schedule ``job`` on now, if any; otherwise asks to be woken when the
        first GPU qualifies on the predicted ends (Liquid's scheduler polls continuously)."""

        def eligible(h: Holding) -> bool:
            saving = not h.training and math.isfinite(h.train_end)
            return h.training or (self.gates == "code" and saving)

        ends = {
            g: self._predicted_end(view, rounds[0], g)
            for g, rounds in enumerate(holders)
            if len(rounds) == 1 and eligible(rounds[0]) and _fits(view.instance, job, g)
        }
        lead = job.launch + PRESCHEDULE_EXTRA
        ready = [g for g, end in ends.items() if end - view.time <= lead]
        if not ready and ends:
            view.wake(min(ends.values()) - lead)
        return min(ready, key=lambda g: (ends[g], g), default=None)

    def _predicted_end(self, view: ClusterView, holder: Holding, g: int) -> float:
        """The holder's training end as the scheduler predicts it (see the module doc)."""
        if not self.end_error or not holder.training:
            return holder.train_end
        key = [zlib.crc32(view.instance.name.encode()), holder.job.index]
        error = float(np.random.default_rng(key).normal(0.0, self.end_error))
        return holder.train_end + error * float(holder.job.compute[g])

    def _place(
        self, view: ClusterView, jobs: list[ClusterJob], vacant: set[int]
    ) -> list[Start] | None:
        inst = view.instance
        pinst, task_of = _placement_instance(inst, jobs, vacant)
        seed = int(view.rng.integers(2**31))
        placement = place(pinst, self.placement, seed=seed, params=self.place_options).placement
        if placement is None:
            return None
        gpus: dict[str, dict[int, int]] = {}
        for a in placement.assignments:
            gpus.setdefault(a.job, {})[task_of[a.container]] = inst.gpu_index[a.gpus[0]]
        return [
            Start(job.index, tuple(gpus[job.id][k] for k in range(job.tasks_per_round)))
            for job in jobs
        ]


def _load_ratio(holders: list[list[Holding]], vacant: set[int]) -> float:
    """Liquid's load ratio UsingGPU / TotalGPU: the share of GPUs not known vacant (a
    hair of slack so that a ratio equal to the threshold passes)."""
    return (len(holders) - len(vacant)) / len(holders) + 1e-12


def _fits(inst: Instance, job: ClusterJob, g: int) -> bool:
    memory = inst.gpus[g].memory
    return bool(np.isfinite(job.compute[g])) and (memory is None or job.gpu_memory <= memory)


def _placement_instance(
    inst: Instance, jobs: list[ClusterJob], vacant: set[int]
) -> tuple[PlacementInstance, dict[str, int]]:
    """The placement problem of ``jobs`` on the vacant GPUs they can all use, and the task
    (index in its round) of each container id."""
    if inst.topology is None:
        raise InputError("the liquid policy needs an instance with a topology (hosts)")
    graph = inst.topology.graph.copy()
    for g, gpu in enumerate(inst.gpus):
        usable = g in vacant and all(_fits(inst, job, g) for job in jobs)
        graph.nodes[gpu.id].update(
            busy=not usable, gpu_memory=gpu.memory if gpu.memory is not None else _UNLIMITED
        )
    task_of = {f"t{k}": k for k in range(max((len(job.roles) for job in jobs), default=0))}
    pjobs = [
        PlacementJob(
            job.id,
            tuple(
                Container(container, role, gpus=1, gpu_memory=job.gpu_memory)
                for container, role in zip(task_of, job.roles, strict=False)
            ),
            inst.jobs[job.index].profile.bandwidth,
        )
        for job in jobs
    ]
    return PlacementInstance(inst.name, Topology(graph), tuple(pjobs)), task_of


@dataclass(frozen=True)
class LiquidOptions(Options):
    """Options of ``liquid``: its own settings, its placement method, and that method's
    options (``place``: every key of Liquid's placement methods, the cost's, best-fit's
    ``line18`` and the GGA's; the chosen method receives those it takes)."""

    placement: PlacementName = choice(
        f"placement method: {', '.join(PLACEMENTS)} (default bestfit)", PLACEMENTS
    )
    place: GgaOptions = group(GgaOptions, "the placement method's options")
    batch: float = period(
        "batch interval in seconds, 0 or at least 0.001 (default 0: immediate mode)"
    )
    share: bool = switch(
        "1: share GPUs among single-task jobs under the instance's share_cap (default 0)"
    )
    preschedule: bool = switch(
        "1: pre-schedule single-task jobs onto GPUs about to be released (default 0)"
    )
    heartbeat: float = period(
        "report freed GPUs only at heartbeats of this period, s, 0 or "
        "at least 0.001 (default 0: event-driven)"
    )
    gates: Literal["paper", "code"] = choice(
        "when sharing and pre-scheduling apply: paper (only for jobs no "
        "vacant GPU can take; default) or code (the reference code's "
        "load-ratio thresholds: share first at share_ratio, pre-schedule at "
        "preschedule_ratio)",
        GATES,
    )
    share_ratio: float = number(
        "code gates: load ratio from which sharing is tried first (default 0.75)",
        CODE_SHARE_RATIO,
        high=1.0,
    )
    preschedule_ratio: float = number(
        "code gates: load ratio from which pre-scheduling applies (default 0.5)",
        CODE_PRESCHEDULE_RATIO,
        high=1.0,
    )
    end_error: float = number(
        "relative standard deviation of the training end "
        "pre-scheduling plans on (default 0: the true end)",
        0.0,
        high=10.0,
    )


@register(
    "liquid",
    kind="simulate",
    modes=("gang",),
    options=LiquidOptions,
    description="Liquid's scheduler: best-fit / GGA placement, GPU sharing, "
    "pre-scheduling, event-driven or heartbeat reporting",
)
def _liquid(options: LiquidOptions, seed: int) -> Liquid:
    if options.gates == "paper":
        for key, default in (
            ("share_ratio", CODE_SHARE_RATIO),
            ("preschedule_ratio", CODE_PRESCHEDULE_RATIO),
        ):
            if getattr(options, key) != default:
                raise InputError(
                    f"{key} applies to gates=code (the paper's gates have no load-ratio threshold)"
                )
    return Liquid(
        options.placement,
        options.batch,
        options.share,
        options.preschedule,
        options.heartbeat,
        placement_options(options),
        options.gates,
        options.share_ratio,
        options.preschedule_ratio,
        options.end_error,
    )


def _options_class(placement: str) -> type[CostOptions]:
    """The options class of placement method ``placement`` (register() makes every place
    method's options a CostOptions)."""
    own = get_method(placement, "place").options
    assert issubclass(own, CostOptions)
    return own


def placement_options(options: LiquidOptions) -> CostOptions:
    """The options of Liquid's placement method, taken from ``options.place`` as values;
    a setting of a key the method does not take is refused (InputError naming it)."""
    own = _options_class(options.placement)
    taken = {f.name for f in fields(own)}
    for f in fields(options.place):
        if f.name not in taken and getattr(options.place, f.name) != f.default:
            key = next(k for k, name in GgaOptions.keys().items() if name == f.name)
            raise InputError(
                f"{key} is not a parameter of placement={options.placement} "
                f"(its parameters: {', '.join(sorted(own.keys()))})"
            )
    return own(**{name: getattr(options.place, name) for name in taken})
