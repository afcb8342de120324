"""The type-merging overlay: mergers, placement, subscriber clients, replication, and the
deterministic simulator that runs them (docs/overlay.md).

>>> from faidecs.overlay import Scenario, SimConfig, simulate
>>> result = simulate(
...     Scenario(
...         "type A(x: int)\\ntype B(x: int)\\n",
...         {"s1": "subscription S1: A and B", "s2": "subscription S2: A and B"},
...         [
...             (0, "pub", {"id": "a1", "type": "A", "attrs": {"x": 1}}),
...             (5, "pub", {"id": "b1", "type": "B", "attrs": {"x": 2}}),
...         ],
...     ),
...     SimConfig(seed=1, matcher="reference"),
... )
>>> sorted((d.process, d.relation) for d in result.log.delivered)
[('s1', ('a1', 'b1')), ('s2', ('a1', 'b1'))]
"""

from faidecs.merging.filters import Filter
from faidecs.merging.roles import Role, conjunction_role, role_name, role_of
from faidecs.overlay.core.coordination import Coordination, SimulatedCoordination
from faidecs.overlay.core.placement import place
from faidecs.overlay.core.replica import MergerReplica, ProtocolError
from faidecs.overlay.core.subscriber import SubscriberClient
from faidecs.overlay.runtime.async_subscriber import AsyncSubscriber, OverlayDelivery
from faidecs.overlay.sim.scenario import Fault, InputPath, Joiner, LatchSpec, Reaction, Scenario, SimConfig
from faidecs.overlay.sim.simulator import SimResult, Simulation, SimulationError, simulate
from faidecs.overlay.sim.topology import Topology

__all__ = [
    "AsyncSubscriber",
    "Coordination",
    "Fault",
    "Filter",
    "InputPath",
    "Joiner",
    "LatchSpec",
    "MergerReplica",
    "OverlayDelivery",
    "ProtocolError",
    "Reaction",
    "Role",
    "Scenario",
    "SimConfig",
    "SimResult",
    "SimulatedCoordination",
    "Simulation",
    "SimulationError",
    "SubscriberClient",
    "Topology",
    "conjunction_role",
    "place",
    "role_name",
    "role_of",
    "simulate",
]
