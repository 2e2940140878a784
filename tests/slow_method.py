"""A plug-in method for runner tests: the ECT baseline after a pause (``--plugin``)."""

from __future__ import annotations

import time

from optsched.contracts import MethodOutput
from optsched.ect import ect_schedule
from optsched.registry import register


@register("test-slow-ect", description="ECT after a 0.25 s pause (tests only)", replace=True)
def slow_ect(instance, context):
    time.sleep(0.25)
    return MethodOutput(schedule=ect_schedule(instance))
