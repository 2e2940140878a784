"""Schedules: where and when every task runs (the ``optsched/schedule@1``/``@2`` contracts).

A :class:`Schedule` only holds what a file can say: job and GPU ids, round and task indices,
start times. Whether those refer to anything or are feasible is the checker's business
(:mod:`optsched.check`), so a schedule naming an unknown job is representable and reported as a
violation rather than rejected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from optsched.errors import InputError
from optsched.limits import MAX_START, is_bounded

#: The execution modes (docs/model.md): a round's tasks run independently (``relaxed``, Hare)
#: or start together on K GPUs (``gang``).
MODES = ("relaxed", "gang")


@dataclass(frozen=True, order=True)
class Task:
    """One task of a schedule: task ``task`` of round ``round`` of ``job`` on ``gpu``.

    ``train_start`` (schedule@2) is when its training begins, for jobs with a launch phase or
    a GPU that another task still trains on (pre-scheduling); None: as early as the instance
    allows (after the launch phase of a first round, else at ``start``).

    ``failed_at`` (schedule@2) marks a **failed attempt**: the round started at ``start`` and
    ran out of (actual) GPU memory when it was to start training at ``failed_at``, releasing
    its GPUs then; the round appears again, later, without ``failed_at``
    (models/cluster-execution.md).
    """

    job: str
    round: int
    task: int
    gpu: str
    start: float
    train_start: float | None = None
    failed_at: float | None = None

    def __post_init__(self) -> None:
        for name in ("job", "gpu"):
            if not isinstance(getattr(self, name), str):
                raise InputError(
                    f"schedule task {name} must be a string, got {getattr(self, name)!r}"
                )
        for name in ("round", "task"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(
                    f"schedule task of job {self.job!r}: {name} must be an integer, got {value!r}"
                )
        for name in ("start", "train_start", "failed_at"):
            value = getattr(self, name)
            if value is None and name != "start":
                continue
            if not is_bounded(value, MAX_START):
                raise InputError(
                    f"schedule task ({self.job!r}, round {self.round}, task "
                    f"{self.task}): {name} must be a number in "
                    f"[-{MAX_START:g}, {MAX_START:g}], got {value!r}"
                )
            object.__setattr__(self, name, float(value))

    @property
    def key(self) -> tuple[str, int, int]:
        """(job, round, task): what identifies the task."""
        return (self.job, self.round, self.task)


@dataclass(frozen=True)
class Schedule:
    """A schedule for instance ``instance``; ``mode`` None means the instance's mode."""

    instance: str
    tasks: tuple[Task, ...]
    mode: str | None = None

    def __init__(self, instance: str, tasks: Iterable[Task], mode: str | None = None) -> None:
        if not isinstance(instance, str) or not instance:
            raise InputError("schedule 'instance' must be a non-empty string")
        if mode is not None and mode not in MODES:
            raise InputError(f"schedule mode must be one of {MODES}, got {mode!r}")
        tasks = tuple(tasks)
        for t in tasks:
            if not isinstance(t, Task):
                raise InputError(f"schedule tasks must be Task objects, got {type(t).__name__}")
        object.__setattr__(self, "instance", instance)
        object.__setattr__(self, "tasks", tasks)
        object.__setattr__(self, "mode", mode)

    def __len__(self) -> int:
        return len(self.tasks)

    def sorted(self) -> Schedule:
        """The same schedule with tasks ordered by (job, round, task, gpu, start)."""
        return Schedule(
            self.instance,
            sorted(
                self.tasks,
                key=lambda t: (
                    t.key,
                    t.gpu,
                    t.start,
                    -math.inf if t.train_start is None else t.train_start,
                    math.inf if t.failed_at is None else t.failed_at,
                ),
            ),
            self.mode,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``optsched/schedule@1`` JSON object (``@2`` when a task has a train_start or
        a failed_at)."""
        v2 = any(t.train_start is not None or t.failed_at is not None for t in self.tasks)
        out: dict[str, Any] = {"format": f"optsched/schedule@{1 + v2}", "instance": self.instance}
        if self.mode is not None:
            out["mode"] = self.mode
        out["tasks"] = [
            {
                "job": t.job,
                "round": t.round,
                "task": t.task,
                "gpu": t.gpu,
                "start": t.start,
                **({} if t.train_start is None else {"train_start": t.train_start}),
                **({} if t.failed_at is None else {"failed_at": t.failed_at}),
            }
            for t in self.tasks
        ]
        return out
