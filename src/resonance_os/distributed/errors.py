"""Errors of the actor layer: Ray missing or unreachable, an actor that ended before answering."""

from __future__ import annotations

from resonance_os.core.errors import ResonanceError

__all__ = ["ActorError", "DistributedError", "RayUnavailableError"]


class DistributedError(ResonanceError):
    """Base class of errors in ``resonance_os.distributed``."""

    http_status = 503


class RayUnavailableError(DistributedError):
    """``--ray`` was given but Ray is not installed or no cluster answers at the address."""


class ActorError(DistributedError):
    """A worker (process or Ray actor) ended, or raised something that could not travel back."""
