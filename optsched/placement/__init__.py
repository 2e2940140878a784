"""Liquid's placement (TPDS'22): the parameter servers and workers of jobs onto the hosts of a
topology.

:func:`place` runs a registered ``place`` method by name and checks its placement with
:func:`check_placement`, which recomputes Liquid's cost (:class:`CostModel`: the paper's form
or an order-free reconstruction of the reference code's evaluator). Instances and placements
are read and written with :func:`load_placement_instance`, :func:`load_placement`,
:func:`save_placement_instance` and :func:`save_placement`; :func:`generate_placement` draws
seeded random instances.
"""

from typing import TYPE_CHECKING

from optsched._exports import lazy_exports

if TYPE_CHECKING:
    from optsched.contracts import PlaceContext as PlaceContext
    from optsched.contracts import PlaceOutput as PlaceOutput
    from optsched.io import load_placement as load_placement
    from optsched.io import load_placement_instance as load_placement_instance
    from optsched.io import save_placement as save_placement
    from optsched.io import save_placement_instance as save_placement_instance
    from optsched.placement.check import PlacementReport as PlacementReport
    from optsched.placement.check import check_placement as check_placement
    from optsched.placement.cost import CostModel as CostModel
    from optsched.placement.cost import CostOptions as CostOptions
    from optsched.placement.cost import placement_cost as placement_cost
    from optsched.placement.generate import PlacementSpec as PlacementSpec
    from optsched.placement.generate import generate_placement as generate_placement
    from optsched.placement.model import Assignment as Assignment
    from optsched.placement.model import Container as Container
    from optsched.placement.model import Placement as Placement
    from optsched.placement.model import PlacementInstance as PlacementInstance
    from optsched.placement.model import PlacementJob as PlacementJob
    from optsched.placement.model import containers as containers
    from optsched.placement.model import placement_from_hosts as placement_from_hosts
    from optsched.placement.run import place as place

lazy_exports(
    __name__,
    {
        "PlacementReport": "optsched.placement.check",
        "check_placement": "optsched.placement.check",
        "CostModel": "optsched.placement.cost",
        "CostOptions": "optsched.placement.cost",
        "placement_cost": "optsched.placement.cost",
        "PlacementSpec": "optsched.placement.generate",
        "generate_placement": "optsched.placement.generate",
        "Assignment": "optsched.placement.model",
        "Container": "optsched.placement.model",
        "Placement": "optsched.placement.model",
        "PlacementInstance": "optsched.placement.model",
        "PlacementJob": "optsched.placement.model",
        "containers": "optsched.placement.model",
        "load_placement": "optsched.io",
        "load_placement_instance": "optsched.io",
        "placement_from_hosts": "optsched.placement.model",
        "save_placement": "optsched.io",
        "save_placement_instance": "optsched.io",
        "PlaceContext": "optsched.contracts",
        "PlaceOutput": "optsched.contracts",
        "place": "optsched.placement.run",
    },
)
__all__ = [
    "Assignment",
    "Container",
    "CostModel",
    "CostOptions",
    "PlaceContext",
    "PlaceOutput",
    "Placement",
    "PlacementInstance",
    "PlacementJob",
    "PlacementReport",
    "PlacementSpec",
    "check_placement",
    "containers",
    "generate_placement",
    "load_placement",
    "load_placement_instance",
    "place",
    "placement_cost",
    "placement_from_hosts",
    "save_placement",
    "save_placement_instance",
]
