"""One entry point for placement methods (kind ``place``), as :func:`optsched.solve` is for
scheduling: every placement a method returns goes through
:func:`~optsched.placement.check.check_placement`, and the Result's objective is the checker's
recomputed cost under the chosen :class:`~optsched.placement.cost.CostModel`, named
``liquid_cost_paper`` or ``liquid_cost_code_reconstructed`` (``cost=code``: the order-free
reconstruction of the reference code's evaluator, :mod:`optsched.placement.cost`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from optsched.contracts import Listener, PlaceContext, PlaceOutput
from optsched.errors import MethodError
from optsched.placement.check import check_placement
from optsched.placement.cost import CostOptions
from optsched.placement.model import Placement, PlacementInstance
from optsched.registry import prepare
from optsched.result import PLACEMENT_MODE, Result, Status, is_optimal
from optsched.runtime import check_bound, finite_bound, listener_of, run_timed, start_within


def place(
    instance: PlacementInstance,
    method: str,
    *,
    seed: int = 0,
    time_limit: float | None = None,
    params: Mapping[str, Any] | CostOptions | None = None,
    progress: TextIO | Listener | None = None,
    started: float | None = None,
) -> Result[Placement]:
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
    MethodError
        (an :class:`~optsched.errors.OptschedError`) A placement the checker rejects, a
        bound that is not a finite number or is above the checked cost, or the method
        raising: bugs in the method, the message naming it and its plug-in.
    """
    ready = prepare(method, "place", seed=seed, time_limit=time_limit, params=params)
    info, time_limit, params = ready.info, ready.time_limit, ready.params
    options = ready.options
    assert isinstance(options, CostOptions)  # register() refuses other place options
    model = options.cost_model()
    listener = listener_of(progress, lambda: None)
    share, startup = start_within(info.start_up, time_limit, started, 0.0)
    context = PlaceContext(model, options, seed, share, params, listener)
    out, runtime = run_timed(info, lambda: info.func(instance, context), listener)
    if not isinstance(out, PlaceOutput):
        raise MethodError(f"{info.label} returned {type(out).__name__}, not a PlaceOutput")
    bound = finite_bound(info, out.bound)
    common: dict[str, Any] = dict(
        method=method,
        mode=PLACEMENT_MODE,
        runtime_s=runtime,
        seed=seed,
        params=params,
        objective_name=model.objective_name,
        kind="place",
    )
    # the only bound of a placement is the method's own
    out_extra = {**out.extra, "bound_source": None if bound is None else "method"}
    if out.placement is None:
        return Result(
            out.status or Status.UNKNOWN,
            objective=None,
            bound=bound,
            extra={
                **out_extra,
                "time_limit": time_limit,
                "method_time_limit": share,
                "startup_s": startup,
            },
            **common,
        )
    report = check_placement(instance, out.placement, model)
    if not report.feasible or report.cost is None:
        first = report.violations[0].message if report.violations else "incomplete"
        raise MethodError(
            f"{info.label} produced an infeasible placement "
            f"({len(report.violations)} violations; first: {first})"
        )
    cost = report.cost.total
    check_bound(info, bound, cost, "cost")
    status = Status.OPTIMAL if is_optimal(cost, bound) else Status.FEASIBLE
    metrics = {"network": report.cost.network, "load": report.cost.load}
    return Result(
        status,
        objective=cost,
        bound=bound,
        metrics=metrics,
        solution=out.placement,
        extra={
            **out_extra,
            "time_limit": time_limit,
            "method_time_limit": share,
            "startup_s": startup,
        },
        **common,
    )
