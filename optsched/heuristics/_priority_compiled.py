"""``priority-search``'s decoder as one compiled event loop (``_priority_kernel.c``): the
Python decoder's schedules, work counts and checkpoints, task by task, at a fraction of its
cost. The loop is compiled on first use with the machine's C compiler and called through
ctypes (:mod:`optsched.ckernel`).

How it stays identical to the Python decoder (``_Decoder`` in
:mod:`optsched.heuristics.priority_search`): it replays it event by event, with the same
queue order (priority, then job), the same heaps' minima, the same choices and tie-breaks, and
every floating-point expression in the same order (compiled without fused multiply-adds); the
objective is the same NumPy product of the weights and the completion times. A checkpoint is
a record in one array of floats per decode (its head, the GPUs' free times, the completion
times, the waiting and the queued rounds), and a decode from checkpoint k copies the previous
decode's first k records and tasks, as the Python decoder keeps its lists' prefixes.
"""

from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from optsched.budget import OutOfTime
from optsched.ckernel import Kernel, bind, load
from optsched.schedule import Schedule, Task

# why the loop returned (_priority_kernel.c)
DONE, OUT_OF_TIME, GROW = 0, 1, 2
#: Floats at the head of a checkpoint's record: moment, tasks, events, scanned, waiting, queued.
HEAD = 6

#: The kernel's arrays that each decode sets (the others are the decoder's, bound once).
_PER_DECODE_FLOATS = ("priority", "before_start", "before_arena", "start", "completion", "arena")
_PER_DECODE_INTS = (
    "before_task",
    "before_entry",
    "before_offset",
    "task",
    "entry",
    "offset",
    "out",
)

#: The most floats a decoder's first arena holds (32 MiB): on traces of many jobs the
#: checkpoints then take what they need, by doubling, not a room for the worst case.
MAX_START_ROOM = 1 << 22

_kernel: list[Kernel] = []  # the one loaded in this process


def kernel() -> Kernel:
    """The compiled decoder, compiled on first use into the cache and loaded once per
    process; an :class:`ImportError` when no C compiler builds it."""
    if not _kernel:
        source = Path(__file__).with_name("_priority_kernel.c")
        _kernel.append(load(source, "priority", extra=[("seconds_left", ctypes.c_double)]))
    return _kernel[0]


class Mark(NamedTuple):
    """A checkpoint's counts: the events decoded and the work scanned before it."""

    events: int
    scanned: int


@dataclass
class CompiledDecoded:
    """One decode: its objective, tasks (rows of job, round, task, GPU; their starts),
    checkpoints (records of ``arena`` at ``offset``) and each job's checkpoint index."""

    objective: float
    task: np.ndarray
    start: np.ndarray
    n_tasks: int
    offset: np.ndarray
    arena: np.ndarray
    entry: np.ndarray
    events: int
    scanned: int
    gathered: int = 0  # gang mode: GPU free times this decode read (its own work count)
    n_checkpoints: int = 0

    @property
    def checkpoints(self) -> _Marks:
        return _Marks(self)


class _Marks:
    """A decode's checkpoints as the search reads them: ``[k]`` gives checkpoint k's counts."""

    def __init__(self, decoded: CompiledDecoded) -> None:
        self.decoded = decoded

    def __len__(self) -> int:
        return self.decoded.n_checkpoints

    def __getitem__(self, k: int) -> Mark:
        if not 0 <= k < self.decoded.n_checkpoints:
            raise IndexError(f"checkpoint {k} of {self.decoded.n_checkpoints}")
        head = self.decoded.arena[self.decoded.offset[k] :][:HEAD]
        return Mark(int(head[2]), int(head[3]))


class CompiledDecoder:
    """The Python decoder's interface (``start``, ``run``, ``schedule``) on the compiled
    loop. ``tables``: the Python decoder (``_Decoder``) to replay, whose instance, rules and
    per-job tables (eligible classes, GPUs by pace, where paces rise) the loop reads,
    flattened into [start, next start) ranges per job or class. Raises
    :class:`ImportError` when the loop cannot be compiled or loaded."""

    def __init__(self, tables: Any, check_every: int) -> None:
        self.kernel = kernel()
        instance, reserve = tables.inst, tables.reserve
        self.inst, self.reserve = instance, reserve
        self.gang = instance.mode == "gang"
        jobs, n, n_gpus = instance.jobs, instance.n_jobs, instance.n_gpus
        self.weight = tables.weight
        self.total = sum(job.n_tasks for job in jobs)
        n_classes = len(tables.members)
        choices = [choice for row in tables.class_choices for choice in row]

        def starts(rows: list[Any]) -> np.ndarray:
            return np.cumsum([0, *map(len, rows)], dtype=np.int64)

        def ints(values: Any) -> np.ndarray:
            return np.array(values, dtype=np.int64)

        def floats(values: Any) -> np.ndarray:
            return np.array(values, dtype=np.float64)

        thresholds = [row for rows in tables.thresholds for row in rows]
        self.arrays: dict[str, np.ndarray] = {
            "arrival": floats([job.arrival for job in jobs]),
            "tasks_per_round": ints(tables.tasks_per_round),
            "rounds": ints(tables.rounds),
            "choice_start": starts(tables.class_choices),
            "choice_class": ints([c for c, _, _ in choices]),
            "choice_compute": floats([compute for _, compute, _ in choices]),
            "choice_pace": floats([pace for _, _, pace in choices]),
            "member_start": starts(tables.members),
            "member_gpu": ints(np.concatenate(tables.members)),
            "order_start": starts(tables.by_pace),
            "order_gpu": ints(np.concatenate(tables.by_pace)),
            "order_pace": floats(np.concatenate(tables.paces)),
            "thr_start": starts(tables.thresholds),
            "thr_end": ints([end for end, _ in thresholds]),
            "thr_pace": floats([pace for _, pace in thresholds]),
        }
        for name in ("free", "virt", "heap_t", "ends", "smallest", "proj"):
            self.arrays[name] = np.zeros(max(1, n_gpus))
        self.arrays["proj_copied"] = np.zeros(max(1, n_classes), dtype=np.int64)
        for name in ("heap_g", "held", "chosen"):
            self.arrays[name] = np.zeros(max(1, n_gpus), dtype=np.int64)
        for name in ("wait_t", "q_key", "q_ready", "q_done", "enter_t"):
            self.arrays[name] = np.zeros(max(1, n))
        for name in ("wait_j", "wait_r", "q_j", "q_r", "q_left", "enter_j", "enter_r"):
            self.arrays[name] = np.zeros(max(1, n), dtype=np.int64)
        sizes = {
            "n_jobs": n,
            "n_gpus": n_gpus,
            "n_classes": n_classes,
            "gang": int(self.gang),
            "reserve": int(reserve),
            "tight": int(tables.tight),
            "check_every": check_every,
            "restart": -1,
            "arena_room": 0,
            "has_deadline": 0,
        }
        # the checkpoints' records (a head, free and completion times, and at most one
        # waiting or queued round per job): room for one per job and their queues at first,
        # within MAX_START_ROOM; a decode that needs more doubles it and starts again
        self.room = min(max(1, n) * (HEAD + n_gpus + n) + 64 * max(1, n), MAX_START_ROOM)
        # the state is bound once (checked for types); a decode sets its own arrays' pointers
        placeholder = {name: self.arrays["free"] for name in _PER_DECODE_FLOATS}
        placeholder.update({name: self.arrays["heap_g"] for name in _PER_DECODE_INTS})
        self.state = bind(self.kernel, {**self.arrays, **placeholder}, sizes)

    def start(self) -> Mark:
        return Mark(0, 0)

    def run(
        self,
        priority: np.ndarray,
        state: Mark,
        before: CompiledDecoded | None,
        restart: int,
        deadline: float | None = None,
    ) -> CompiledDecoded:
        """Decode from checkpoint ``restart`` of ``before`` (or the start); raise
        :class:`~optsched.budget.OutOfTime` once ``time.perf_counter()`` passes ``deadline``
        (checked every ``check_every`` events)."""
        n = self.inst.n_jobs
        while True:
            decoded = CompiledDecoded(
                0.0,
                np.empty((self.total, 4), dtype=np.int64),
                np.empty(self.total),
                0,
                np.zeros(n + 1, dtype=np.int64),
                np.empty(self.room),
                np.zeros(n, dtype=np.int64),
                0,
                0,
            )
            completion, out = np.zeros(n), np.zeros(6, dtype=np.int64)
            earlier = before if before is not None else decoded
            keys = np.ascontiguousarray(priority, dtype=np.float64)  # alive through the call
            bound: Any = self.state
            for name, array in (
                ("priority", keys),
                ("before_task", earlier.task),
                ("before_start", earlier.start),
                ("before_entry", earlier.entry),
                ("before_offset", earlier.offset),
                ("before_arena", earlier.arena),
                ("task", decoded.task),
                ("start", decoded.start),
                ("completion", completion),
                ("entry", decoded.entry),
                ("offset", decoded.offset),
                ("arena", decoded.arena),
                ("out", out),
            ):
                setattr(bound, name, array.ctypes.data)
            bound.restart = restart if before is not None else -1
            bound.arena_room = len(decoded.arena)
            bound.has_deadline = int(deadline is not None)
            if deadline is not None:
                bound.seconds_left = deadline - time.perf_counter()
            status = self.kernel.run(ctypes.byref(bound))
            if status == OUT_OF_TIME:
                raise OutOfTime
            if status == GROW:
                self.room *= 2
                continue
            decoded.objective = float(self.weight @ completion)
            decoded.n_tasks, decoded.events, decoded.scanned = (int(v) for v in out[1:4])
            decoded.n_checkpoints, decoded.gathered = int(out[4]), int(out[5])
            return decoded

    def schedule(self, decoded: CompiledDecoded) -> Schedule:
        jobs, gpus = self.inst.jobs, self.inst.gpus
        rows = decoded.task[: decoded.n_tasks].tolist()
        starts = decoded.start[: decoded.n_tasks].tolist()
        return Schedule(
            self.inst.name,
            [
                Task(jobs[j].id, r, k, gpus[g].id, start)
                for (j, r, k, g), start in zip(rows, starts, strict=True)
            ],
            self.inst.mode,
        )
