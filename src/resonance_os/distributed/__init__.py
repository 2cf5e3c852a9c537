"""Workers as actors: local processes by default, Ray actors on a cluster (``--ray ADDRESS``).

``placement_for(address)`` -> a ``Placement`` whose ``start(cls, *args, name=...)`` returns an
``Actor`` with ``call(method, *args) -> Future``. Imports ``core`` only; Ray is the ``ray`` extra,
imported only when a ``RayCluster`` is made. See docs/verify.md ("On a Ray cluster").
"""

from __future__ import annotations

from resonance_os.distributed.actors import (
    Actor,
    LocalProcesses,
    Placement,
    ProcessActor,
    RayActor,
    RayCluster,
    placement_for,
    preload_in_local_processes,
)
from resonance_os.distributed.errors import ActorError, DistributedError, RayUnavailableError

__all__ = [
    "Actor",
    "ActorError",
    "DistributedError",
    "LocalProcesses",
    "Placement",
    "ProcessActor",
    "RayActor",
    "RayCluster",
    "RayUnavailableError",
    "placement_for",
    "preload_in_local_processes",
]
