"""optsched: exact and heuristic scheduling of DL training jobs on heterogeneous GPU clusters.

The core objects: :class:`Instance` (GPUs or a topology, jobs, mode), :class:`Schedule`, the
independent :func:`check`, and :func:`solve` over a registry of methods (:func:`register`)
returning a :class:`Result`; generators for random instances (:func:`generate`) and for the
Hare and Liquid papers' settings (:func:`generate_hare`, :func:`generate_liquid`).

The other public modules: :mod:`optsched.online` (simulation of online policies),
:mod:`optsched.placement` (Liquid's placement), :mod:`optsched.traces` (peer systems' job
traces), :mod:`optsched.bench` (instance sets, benchmark runs, gap tables, data frames),
:mod:`optsched.plot` (Gantt charts, JCT distributions) and :mod:`optsched.testing`
(hypothesis strategies and assertions for property tests).
"""

from optsched.check import CheckReport as CheckReport
from optsched.check import Violation as Violation
from optsched.check import check as check
from optsched.errors import InputError as InputError
from optsched.errors import OptschedError as OptschedError
from optsched.errors import UnknownNameError as UnknownNameError
from optsched.generate import GeneratorSpec as GeneratorSpec
from optsched.generate import HareSpec as HareSpec
from optsched.generate import LiquidSpec as LiquidSpec
from optsched.generate import generate as generate
from optsched.generate import generate_hare as generate_hare
from optsched.generate import generate_liquid as generate_liquid
from optsched.instance import GPU as GPU
from optsched.instance import ClusterProfile as ClusterProfile
from optsched.instance import Instance as Instance
from optsched.instance import Job as Job
from optsched.io import load_instance as load_instance
from optsched.io import load_schedule as load_schedule
from optsched.io import save_instance as save_instance
from optsched.io import save_schedule as save_schedule
from optsched.result import Result as Result
from optsched.result import Status as Status
from optsched.schedule import Schedule as Schedule
from optsched.schedule import Task as Task
from optsched.solve import MethodOutput as MethodOutput
from optsched.solve import SolveContext as SolveContext
from optsched.solve import get_method as get_method
from optsched.solve import methods as methods
from optsched.solve import register as register
from optsched.solve import solve as solve
from optsched.topology import Topology as Topology
from optsched.topology import tree_topology as tree_topology

__version__ = "0.1.0"

__all__ = [
    "GPU",
    "CheckReport",
    "ClusterProfile",
    "GeneratorSpec",
    "HareSpec",
    "InputError",
    "Instance",
    "Job",
    "LiquidSpec",
    "MethodOutput",
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
    "load_schedule",
    "methods",
    "register",
    "save_instance",
    "save_schedule",
    "solve",
    "tree_topology",
]
