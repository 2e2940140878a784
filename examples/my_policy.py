"""An online policy of your own, registered as an optsched ``simulate`` method (relaxed mode).

Weighted least-attained-service: the waiting job with the least service so far per unit of
weight goes first (non-clairvoyant: it never looks at the work left), each of its waiting
tasks on the idle GPU where it computes fastest. Registered as a policy factory
(:class:`optsched.contracts.PolicyFactory`): ``factory(options, seed)`` returns a fresh
policy for each run. Load it with ``--plugin examples/my_policy.py``, ``load_plugin`` in
Python, or import it; ``simulate(instance, "weighted-las")`` then checks every schedule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from optsched import register
from optsched.online import View
from optsched.options import Options, choice


@dataclass(frozen=True)
class WeightedLasOptions(Options):
    """The policy's options: ``--param gpu=any`` on the command line."""

    gpu: Literal["fastest", "any"] = choice(
        "which idle GPU a task takes: fastest (where it computes fastest; default) or any "
        "(the idle GPU with the lowest index it can use)",
        ("fastest", "any"),
    )


class WeightedLas:
    """Decides on the engine's view: waiting jobs by attained service ÷ weight."""

    name = "weighted-las"
    modes = frozenset({"relaxed"})

    def __init__(self, options: WeightedLasOptions) -> None:
        self.options = options

    def decide(self, view: View) -> Iterator[tuple[int, int]]:
        idle = list(view.idle)
        for job in sorted(view.waiting, key=lambda j: (j.attained / j.weight, j.index)):
            while job.waiting and idle:
                usable = [g for g in idle if np.isfinite(job.compute[g])]
                if not usable:
                    break
                gpu = (
                    min(usable, key=lambda g: job.compute[g])
                    if self.options.gpu == "fastest"
                    else usable[0]
                )
                idle.remove(gpu)
                yield job.index, gpu  # applies at once: job.waiting falls by one


@register(
    "weighted-las",
    kind="simulate",
    modes=["relaxed"],
    options=WeightedLasOptions,
    description="weighted least attained service (example plug-in)",
)
def weighted_las(options: WeightedLasOptions, seed: int) -> WeightedLas:
    return WeightedLas(options)
