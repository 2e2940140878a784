"""One entry point for placement methods (kind ``place``), as :func:`optsched.solve` is for
scheduling: every placement a method returns goes through
:func:`~optsched.placement.check.check_placement`, and the Result's objective is the checker's
recomputed cost under the chosen :class:`~optsched.placement.cost.CostModel`, named
``liquid_cost_paper`` or ``liquid_cost_code_reconstructed`` (``cost=code``: the order-free
reconstruction of the reference code's evaluator, :mod:`optsched.placement.cost`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from optsched.errors import InputError, OptschedError
from optsched.params import choice_param
from optsched.placement.check import check_placement
from optsched.placement.cost import VARIANTS, CostModel
from optsched.placement.model import Placement, PlacementInstance
from optsched.result import Result, Status, is_optimal
from optsched.solve import (
    MethodError,
    check_bound,
    finite_bound,
    prepare,
    run_timed,
)

#: Parameters every placement method accepts (the cost it is measured with).
COST_PARAMS = {
    "cost": "paper (eqs. 2-6: λ, rack/domain sizes, fitness; default) or code (a "
            "reconstruction of the reference code's evaluator: 1/4/40 × bandwidth, order-free "
            "PS-spread/worker-pack load; objective liquid_cost_code_reconstructed)",
    "lambda": "the paper's λ in [0, 1] (default 0.5)",
    "cross_domain": "the paper's cost of a cross-domain pair (default: the number of hosts)",
    "contention": "1: weight each remote pair by the flows sharing its worker's host link "
                  "(default 0; heuristics only)",
}


@dataclass(frozen=True)
class PlaceContext:
    """What a placement method is given besides the instance."""

    model: CostModel
    seed: int = 0
    time_limit: float | None = None
    params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PlaceOutput:
    """A placement (None: none found; ``status`` says why) and a certified lower bound on
    the cost, or None."""

    placement: Placement | None = None
    bound: float | None = None
    status: Status | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def cost_model(params: Mapping[str, str]) -> CostModel:
    """The cost model of the ``cost``, ``lambda``, ``cross_domain`` and ``contention``
    parameters."""
    def number(key: str) -> float | None:
        if key not in params:
            return None
        try:
            return float(params[key])
        except ValueError:
            raise InputError(f"{key} must be a number, got {params[key]!r}") from None

    lam = number("lambda")
    contention = choice_param({"contention": params.get("contention", "0")}, "contention",
                              ("0", "1")) == "1"
    return CostModel(choice_param(params, "cost", VARIANTS), 0.5 if lam is None else lam,
                     number("cross_domain"), contention)


def place(instance: PlacementInstance, method: str, *, seed: int = 0,
          time_limit: float | None = None, params: Mapping[str, str] | None = None
          ) -> Result[Placement]:
    """Run the registered ``place`` method ``method`` and check its placement (the Result's
    ``solution``, also :attr:`~optsched.result.Result.placement`; None when none was found).

    ``time_limit`` (seconds; default: the method's ``default_time_limit``, see
    ``optsched methods``) bounds the run; the limit used is in ``extra["time_limit"]``.

    Raises
    ------
    InputError
        Unknown method or parameter, bad cost parameters.
    OptschedError
        A placement the checker rejects, a bound that is not a finite number or is above the
        checked cost, or the method raising (:class:`~optsched.solve.MethodError` naming the
        method and its plug-in: bugs in the method).
    """
    info, time_limit, params = prepare(method, "place", seed=seed, time_limit=time_limit,
                                       params=params)
    model = cost_model(params)
    context = PlaceContext(model, seed, time_limit, params)
    out, runtime, startup = run_timed(info, lambda: info.func(instance, context))
    if not isinstance(out, PlaceOutput):
        raise MethodError(f"{info.label} returned {type(out).__name__}, not a PlaceOutput")
    bound = finite_bound(info, out.bound)
    common: dict[str, Any] = dict(method=method, mode="placement", runtime_s=runtime, seed=seed,
                                  params=params, objective_name=model.objective_name)
    if out.placement is None:
        return Result(out.status or Status.UNKNOWN, objective=None, bound=bound,
                      extra={**out.extra, "time_limit": time_limit, "startup_s": startup},
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
                  extra={**out.extra, "time_limit": time_limit, "startup_s": startup},
                  **common)
