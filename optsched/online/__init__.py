"""Online scheduling: one event engine, two execution models, and the policies.

:func:`simulate` (also :func:`optsched.simulate`) runs a registered ``simulate`` method by
name and returns a checked :class:`~optsched.result.Result`; :func:`run_simulation` runs any
policy object and returns the bare :class:`Simulation`. A policy for the
basic model (relaxed and gang rounds) follows :class:`Policy` and sees a :class:`View`; one for
the cluster model (launch and save phases, GPU sharing, placement factors) sets
``execution = "cluster"``, follows :class:`ClusterPolicy` and sees a :class:`ClusterView`.
Decisions are :class:`Start` tuples. :class:`Observer` subclasses receive every event.
"""

from optsched.online.cluster import ClusterJob as ClusterJob
from optsched.online.cluster import ClusterPolicy as ClusterPolicy
from optsched.online.cluster import ClusterView as ClusterView
from optsched.online.compare import Comparison as Comparison
from optsched.online.compare import compare as compare
from optsched.online.engine import STALL_INSTANTS as STALL_INSTANTS
from optsched.online.engine import MetricsObserver as MetricsObserver
from optsched.online.engine import Observer as Observer
from optsched.online.engine import PhaseMetricsObserver as PhaseMetricsObserver
from optsched.online.engine import PolicyError as PolicyError
from optsched.online.engine import ScheduleStreamer as ScheduleStreamer
from optsched.online.engine import Simulation as Simulation
from optsched.online.engine import Start as Start
from optsched.online.run import simulate as simulate
from optsched.online.simulator import IdleGPUs as IdleGPUs
from optsched.online.simulator import JobState as JobState
from optsched.online.simulator import Oracle as Oracle
from optsched.online.simulator import Policy as Policy
from optsched.online.simulator import SizeDistribution as SizeDistribution
from optsched.online.simulator import View as View
from optsched.online.simulator import WaitingQueue as WaitingQueue
from optsched.online.simulator import realise as realise
from optsched.online.simulator import run_simulation as run_simulation

__all__ = [
    "STALL_INSTANTS",
    "ClusterJob",
    "ClusterPolicy",
    "ClusterView",
    "Comparison",
    "IdleGPUs",
    "JobState",
    "MetricsObserver",
    "Observer",
    "Oracle",
    "PhaseMetricsObserver",
    "Policy",
    "PolicyError",
    "ScheduleStreamer",
    "Simulation",
    "SizeDistribution",
    "Start",
    "View",
    "WaitingQueue",
    "compare",
    "realise",
    "run_simulation",
    "simulate",
]
