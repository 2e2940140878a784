"""One entry point for placement methods (kind ``place``), as :func:`optsched.solve` is for
scheduling: every placement a method returns goes through
:func:`~optsched.placement.check.check_placement`, and the Result's objective is the checker's
recomputed cost under the chosen :class:`~optsched.placement.cost.CostModel`, named
``liquid_cost_paper`` or ``liquid_cost_code_reconstructed`` (``cost=code``: the order-free
reconstruction of the reference code's evaluator, :mod:`optsched.placement.cost`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from optsched.errors import OptschedError
from optsched.exact.budget import MIN_METHOD_SECONDS
from optsched.placement.check import check_placement
from optsched.placement.cost import CostModel, CostOptions
from optsched.placement.model import Placement, PlacementInstance
from optsched.result import Result, Status, is_optimal
from optsched.solve import (
    MethodError,
    ProgressLine,
    check_bound,
    finite_bound,
    method_share,
    options_as,
    prepare,
    run_timed,
)

CostOptionsT = TypeVar("CostOptionsT", bound=CostOptions)


@dataclass(frozen=True)
class PlaceContext:
    """What a placement method is given besides the instance: the cost model of its options,
    its typed options (:meth:`options_as`) and the same as ``KEY=VALUE`` text."""

    model: CostModel
    seed: int = 0
    time_limit: float | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    options: CostOptions = field(default_factory=CostOptions)
    #: Receives the method's progress (:meth:`report`); None: nobody listens.
    progress: Callable[[float | None, float | None], None] | None = None

    def options_as(self, cls: type[CostOptionsT]) -> CostOptionsT:
        """:attr:`options`, typed as the method's own class ``cls``."""
        return options_as(self.options, cls)

    def report(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """Tell the caller the cost of the best placement found so far and the best
        certified lower bound (either may be None); cheap, call it freely."""
        if self.progress is not None:
            self.progress(incumbent, bound)


@dataclass(frozen=True)
class PlaceOutput:
    """A placement (None: none found; ``status`` says why) and a certified lower bound on
    the cost, or None."""

    placement: Placement | None = None
    bound: float | None = None
    status: Status | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def place(instance: PlacementInstance, method: str, *, seed: int = 0,
          time_limit: float | None = None,
          params: Mapping[str, Any] | CostOptions | None = None, progress: Any = None,
          started: float | None = None) -> Result[Placement]:
    """Run the registered ``place`` method ``method`` and check its placement (the Result's
    ``solution``, also :attr:`~optsched.result.Result.placement`; None when none was found).

    ``time_limit`` (seconds; default: the method's ``default_time_limit``, see
    ``optsched methods``) bounds the run, counted from ``started`` (a
    ``time.perf_counter()`` value; default: when ``place`` is called); the limit used is in
    ``extra["time_limit"]``, the method's share in ``extra["method_time_limit"]``.
    ``progress``: a text stream (e.g. ``sys.stderr``) on which a run longer than 5 s prints
    a line every 5 s or so (elapsed time, best cost so far), or a callable
    ``progress(incumbent, bound)`` receiving every report; None: silent.

    Raises
    ------
    InputError
        Unknown method or parameter, bad cost parameters.
    OptschedError
        A placement the checker rejects, a bound that is not a finite number or is above the
        checked cost, or the method raising (:class:`~optsched.solve.MethodError` naming the
        method and its plug-in: bugs in the method).
    """
    ready = prepare(method, "place", seed=seed, time_limit=time_limit, params=params)
    info, time_limit, params = ready.info, ready.time_limit, ready.params
    options = options_as(ready.options, CostOptions)
    model = options.cost_model()
    listener = progress if callable(progress) or progress is None else \
        ProgressLine(progress, None)
    share = method_share(time_limit, started, 0.0)
    startup = 0.0  # with no time left, the method returns its fallback without its solvers
    if share is None or share > MIN_METHOD_SECONDS:
        startup = info.start_up()  # before the method's share is worked out
        share = method_share(time_limit, started, 0.0)
    context = PlaceContext(model, seed, share, params, options, listener)
    out, runtime, _ = run_timed(info, lambda: info.func(instance, context), listener=listener,
                                start_up=False)
    if not isinstance(out, PlaceOutput):
        raise MethodError(f"{info.label} returned {type(out).__name__}, not a PlaceOutput")
    bound = finite_bound(info, out.bound)
    common: dict[str, Any] = dict(method=method, mode="placement", runtime_s=runtime, seed=seed,
                                  params=params, objective_name=model.objective_name)
    # the only bound of a placement is the method's own
    out_extra = {**out.extra, "bound_source": None if bound is None else "method"}
    if out.placement is None:
        return Result(out.status or Status.UNKNOWN, objective=None, bound=bound,
                      extra={**out_extra, "time_limit": time_limit,
                             "method_time_limit": share, "startup_s": startup},
                      **common)
    report = check_placement(instance, out.placement, model)
    if not report.feasible or report.cost is None:
        first = report.violations[0].message if report.violations else "incomplete"
        raise OptschedError(f"placement method {method!r} produced an infeasible placement "
                            f"({len(report.violations)} violations; first: {first})")
    cost = report.cost.total
    check_bound(info, bound, cost, "cost")
    status = Status.OPTIMAL if is_optimal(cost, bound) else Status.FEASIBLE
    metrics = {"network": report.cost.network, "load": report.cost.load}
    return Result(status, objective=cost, bound=bound, metrics=metrics,
                  solution=out.placement,
                  extra={**out_extra, "time_limit": time_limit, "method_time_limit": share,
                         "startup_s": startup},
                  **common)
