"""An optsched plug-in: ``random-list``, list scheduling in a seeded random job order.

optsched imports this module when it loads its methods, because the package declares it in
the entry-point group ``optsched.methods`` (see pyproject.toml). Importing it registers the
method; anything it raises while importing is reported as bad input naming the entry point.
"""

from __future__ import annotations

import numpy as np

from optsched import Instance, MethodOutput, Schedule, SolveContext, Task, register


@register(
    "random-list",
    modes=["relaxed"],
    description="list scheduling in a seeded random job order (example plug-in)",
)
def random_list(instance: Instance, context: SolveContext) -> MethodOutput:
    rng = np.random.default_rng(context.seed)
    free = np.zeros(instance.n_gpus)
    tasks = []
    for j in rng.permutation(instance.n_jobs):
        job, ready = instance.jobs[j], instance.jobs[j].arrival
        for r in range(job.rounds):
            done = ready
            for k in range(job.tasks_per_round):
                eligible = instance.eligible(j)
                g = int(eligible[np.argmin(np.maximum(free[eligible], ready))])
                start = max(float(free[g]), ready)
                free[g] = start + instance.compute[j, g]
                done = max(done, free[g] + instance.sync[j, g])
                tasks.append(Task(job.id, r, k, instance.gpus[g].id, start))
            ready = done
    return MethodOutput(schedule=Schedule(instance.name, tasks, context.mode))
