"""A heuristic of your own, registered as an optsched method (relaxed mode).

Weighted shortest processing time (WSPT) list scheduling: jobs in order of weight per unit of
work (Smith's rule, work measured on each job's fastest GPU type, or with the option
``work=mean`` its mean GPU), each job's rounds one after another, each task on the eligible
GPU where its result is ready earliest. Load it with ``--plugin examples/my_heuristic.py`` on
the command line, ``load_plugin`` in Python, or import it. ``solve(instance, "wspt")`` then
checks every schedule it returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optsched import Instance, MethodOutput, Schedule, SolveContext, Task, register
from optsched.options import Options, choice


@dataclass(frozen=True)
class WsptOptions(Options):
    """The heuristic's options: ``--param work=mean`` on the command line."""

    work: str = choice(
        "a job's work per task: fastest (its fastest GPU; default) or mean "
        "(its mean over the GPUs it can use)",
        ("fastest", "mean"),
    )


@register(
    "wspt",
    modes=["relaxed"],
    options=WsptOptions,
    description="WSPT list scheduling (example plug-in)",
)
def wspt(instance: Instance, context: SolveContext[WsptOptions]) -> MethodOutput:
    options = context.options

    def smith(j: int) -> float:
        job, times = instance.jobs[j], instance.compute[j]
        per_task = float(
            times.min() if options.work == "fastest" else times[np.isfinite(times)].mean()
        )
        return job.weight / (job.rounds * job.tasks_per_round * per_task)

    free = [0.0] * instance.n_gpus  # when each GPU finishes its current task
    tasks = []
    for j in sorted(range(instance.n_jobs), key=smith, reverse=True):
        job, ready = instance.jobs[j], instance.jobs[j].arrival
        for r in range(job.rounds):
            done = ready  # when every result of this round is ready
            for k in range(job.tasks_per_round):
                # the eligible GPU where this task's result (compute + sync) is ready first
                result, start, g = min(
                    (
                        max(free[g], ready) + instance.compute[j, g] + instance.sync[j, g],
                        max(free[g], ready),
                        g,
                    )
                    for g in instance.eligible(j)
                )
                done = max(done, result)
                free[g] = start + instance.compute[j, g]  # the sync overlaps the next task
                tasks.append(Task(job.id, r, k, instance.gpus[g].id, start))
            ready = done
    return MethodOutput(schedule=Schedule(instance.name, tasks, context.mode))
