"""optsched: exact and heuristic scheduling of DL training jobs on heterogeneous GPU clusters.

The core objects: :class:`Instance` (GPUs or a topology, jobs, mode), :class:`Schedule`, the
independent :func:`check`, and the three verbs over a registry of methods (:func:`register`,
:func:`load_plugin`; typed :class:`Options`), each returning a checked :class:`Result`:
:func:`solve` (offline scheduling), :func:`simulate` (an online policy) and :func:`place`
(Liquid's placement); generators for random instances (:func:`generate`) and for the Hare and
Liquid papers' settings (:func:`generate_hare`, :func:`generate_liquid`).

The other public modules: :mod:`optsched.online` (simulation of online policies),
:mod:`optsched.placement` (Liquid's placement), :mod:`optsched.traces` (peer systems' job
traces), :mod:`optsched.bench` (instance sets, benchmark runs, gap tables, data frames),
:mod:`optsched.plot` (Gantt charts, GPU types busy over time, JCT distributions) and
:mod:`optsched.testing` (hypothesis strategies and assertions for property tests).
"""

from typing import TYPE_CHECKING

from optsched._exports import lazy_exports

if TYPE_CHECKING:
    from optsched.check import CheckReport as CheckReport
    from optsched.check import Violation as Violation
    from optsched.check import check as check
    from optsched.cluster_model import ClusterProfile as ClusterProfile
    from optsched.cluster_model import ClusterSpec as ClusterSpec
    from optsched.contracts import MethodOutput as MethodOutput
    from optsched.contracts import SolveContext as SolveContext
    from optsched.errors import InputError as InputError
    from optsched.errors import MethodError as MethodError
    from optsched.errors import OptschedError as OptschedError
    from optsched.errors import UnknownNameError as UnknownNameError
    from optsched.generate import GeneratorSpec as GeneratorSpec
    from optsched.generate import HareSpec as HareSpec
    from optsched.generate import LiquidSpec as LiquidSpec
    from optsched.generate import generate as generate
    from optsched.generate import generate_hare as generate_hare
    from optsched.generate import generate_liquid as generate_liquid
    from optsched.instance import GPU as GPU
    from optsched.instance import Instance as Instance
    from optsched.instance import Job as Job
    from optsched.io import load_instance as load_instance
    from optsched.io import load_schedule as load_schedule
    from optsched.io import save_instance as save_instance
    from optsched.io import save_schedule as save_schedule
    from optsched.online.run import simulate as simulate
    from optsched.options import Options as Options
    from optsched.placement.run import place as place
    from optsched.registry import get_method as get_method
    from optsched.registry import load_plugin as load_plugin
    from optsched.registry import methods as methods
    from optsched.registry import register as register
    from optsched.result import Result as Result
    from optsched.result import Status as Status
    from optsched.schedule import Schedule as Schedule
    from optsched.schedule import Task as Task
    from optsched.solve import solve as solve
    from optsched.topology import Topology as Topology
    from optsched.topology import tree_topology as tree_topology

__version__ = "0.1.0"

# every name is imported on first use, so that ``import optsched`` (and the command line's
# start-up) loads only what is used
lazy_exports(
    __name__,
    {
        "CheckReport": "optsched.check",
        "Violation": "optsched.check",
        "check": "optsched.check",
        "MethodOutput": "optsched.contracts",
        "SolveContext": "optsched.contracts",
        "InputError": "optsched.errors",
        "MethodError": "optsched.errors",
        "OptschedError": "optsched.errors",
        "UnknownNameError": "optsched.errors",
        "GeneratorSpec": "optsched.generate",
        "HareSpec": "optsched.generate",
        "LiquidSpec": "optsched.generate",
        "generate": "optsched.generate",
        "generate_hare": "optsched.generate",
        "generate_liquid": "optsched.generate",
        "GPU": "optsched.instance",
        "ClusterProfile": "optsched.cluster_model",
        "ClusterSpec": "optsched.cluster_model",
        "Instance": "optsched.instance",
        "Job": "optsched.instance",
        "load_instance": "optsched.io",
        "load_schedule": "optsched.io",
        "save_instance": "optsched.io",
        "save_schedule": "optsched.io",
        "Options": "optsched.options",
        "get_method": "optsched.registry",
        "load_plugin": "optsched.registry",
        "methods": "optsched.registry",
        "register": "optsched.registry",
        "Result": "optsched.result",
        "Status": "optsched.result",
        "Schedule": "optsched.schedule",
        "Task": "optsched.schedule",
        "solve": "optsched.solve",
        "Topology": "optsched.topology",
        "tree_topology": "optsched.topology",
        "simulate": "optsched.online.run",
        "place": "optsched.placement.run",
    },
)

__all__ = [
    "GPU",
    "CheckReport",
    "ClusterProfile",
    "ClusterSpec",
    "GeneratorSpec",
    "HareSpec",
    "InputError",
    "Instance",
    "Job",
    "LiquidSpec",
    "MethodError",
    "MethodOutput",
    "Options",
    "OptschedError",
    "Result",
    "Schedule",
    "SolveContext",
    "Status",
    "Task",
    "Topology",
    "UnknownNameError",
    "Violation",
    "check",
    "generate",
    "generate_hare",
    "generate_liquid",
    "get_method",
    "load_instance",
    "load_plugin",
    "load_schedule",
    "methods",
    "place",
    "register",
    "save_instance",
    "save_schedule",
    "simulate",
    "solve",
    "tree_topology",
]
