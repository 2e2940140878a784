"""The ``ect`` method: earliest-completion-time list scheduling (:mod:`optsched.ect`), the
baseline of both modes. No approximation guarantee is claimed; it is the reference every other
method must beat."""

from __future__ import annotations

from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import ect_schedule
from optsched.instance import Instance
from optsched.options import Options
from optsched.registry import register


@register("ect", description="earliest-completion-time list scheduling (baseline, both modes)")
def _ect(instance: Instance, context: SolveContext[Options]) -> MethodOutput:
    return MethodOutput(schedule=ect_schedule(instance))
