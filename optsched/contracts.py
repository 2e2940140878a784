"""The three kinds of method, as the types a method is written against.

=========== ============================================== ===============================
kind        a method is                                    verb
=========== ============================================== ===============================
``solve``   :class:`SolveMethod`: ``(instance, context:     :func:`optsched.solve`
            SolveContext[O]) -> MethodOutput``
``simulate`` :class:`PolicyFactory`: ``(options: O, seed)    :func:`optsched.simulate`
            -> policy`` (an object with ``decide(view)``)
``place``   :class:`PlaceMethod`: ``(instance, context:     :func:`optsched.place`
            PlaceContext[O]) -> PlaceOutput``
=========== ============================================== ===============================

``O`` is the method's options class (a frozen :class:`~optsched.options.Options` dataclass,
declared at registration); the verb builds it from ``--param`` text and hands it over typed,
as ``context.options`` (``options`` for a policy factory).

Examples
--------
>>> from dataclasses import dataclass
>>> from optsched.options import Options, count
>>> @dataclass(frozen=True)
... class DepthOptions(Options):
...     depth: int = count("search depth (default 3)", 3)
>>> def my_method(instance, context: SolveContext[DepthOptions]) -> MethodOutput:
...     return MethodOutput()  # context.options.depth is an int to a type checker
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from optsched.instance import Instance
from optsched.options import Options
from optsched.result import Status
from optsched.schedule import Schedule

if TYPE_CHECKING:  # the placement model is data beside Instance; imported for types only
    from optsched.placement.cost import CostModel, CostOptions
    from optsched.placement.model import Placement, PlacementInstance

#: A method's options class.
O = TypeVar("O", bound=Options)  # noqa: E741
O_in = TypeVar("O_in", bound=Options, contravariant=True)
#: Receives a method's progress: ``listener(incumbent, bound)``, either may be None.
Listener = Callable[[float | None, float | None], None]


@dataclass(frozen=True)
class SolveContext(Generic[O]):
    """What a ``solve`` method is given besides the instance (already in ``mode``):
    ``options``, its typed options, ``params`` the same as ``KEY=VALUE`` text (what the Result
    records), the share of the time limit it may use, the run's seed and a hint schedule."""

    mode: str
    options: O
    time_limit: float | None = None
    seed: int = 0
    params: Mapping[str, str] = field(default_factory=dict)
    hint: Schedule | None = None
    #: Receives the method's progress (:meth:`report`); None: nobody listens.
    progress: Listener | None = None

    def report(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """Tell the caller the objective of the best schedule found so far and the best
        certified lower bound (either may be None when unknown); cheap, call it freely."""
        if self.progress is not None:
            self.progress(incumbent, bound)


@dataclass(frozen=True)
class MethodOutput:
    """What a ``solve`` method returns.

    ``schedule`` None means no solution; then ``status`` says why (``infeasible`` only when
    proved). ``bound`` must be a certified lower bound on Σ w_j C_j, or None.
    """

    schedule: Schedule | None = None
    bound: float | None = None
    status: Status | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class SolveMethod(Protocol[O]):
    """A ``solve`` method: schedules ``instance`` (in ``context.mode``)."""

    def __call__(self, instance: Instance, context: SolveContext[O], /) -> MethodOutput: ...


class OnlinePolicy(Protocol):
    """What a policy factory returns, as far as the registry is concerned: an object with
    ``decide(view)``. The engine's full contracts are
    :class:`optsched.online.Policy` (basic model) and :class:`optsched.online.ClusterPolicy`
    (cluster model)."""

    def decide(self, view: Any, /) -> Iterable[Any]: ...


class PolicyFactory(Protocol[O_in]):
    """A ``simulate`` method: builds a fresh policy from its options and the run's seed (for
    the policy's random choices)."""

    def __call__(self, options: O_in, seed: int, /) -> OnlinePolicy: ...


#: A placement method's options class (a subclass of the cost model's options).
C = TypeVar("C", bound="CostOptions")


@dataclass(frozen=True)
class PlaceContext(Generic[C]):
    """What a ``place`` method is given besides the instance: the cost model of its options,
    its typed options and the same as ``KEY=VALUE`` text."""

    model: CostModel
    options: C
    seed: int = 0
    time_limit: float | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    #: Receives the method's progress (:meth:`report`); None: nobody listens.
    progress: Listener | None = None

    def report(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """Tell the caller the cost of the best placement found so far and the best
        certified lower bound (either may be None); cheap, call it freely."""
        if self.progress is not None:
            self.progress(incumbent, bound)


@dataclass(frozen=True)
class PlaceOutput:
    """What a ``place`` method returns: a placement (None: none found; ``status`` says why)
    and a certified lower bound on the cost, or None."""

    placement: Placement | None = None
    bound: float | None = None
    status: Status | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class PlaceMethod(Protocol[C]):
    """A ``place`` method: places the containers of ``instance``'s jobs on its hosts."""

    def __call__(
        self, instance: PlacementInstance, context: PlaceContext[C], /
    ) -> PlaceOutput: ...
