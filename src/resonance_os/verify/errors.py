"""Errors of the verification layer: user mistakes (a bad test file, a sandbox that cannot start)."""

from __future__ import annotations

from resonance_os.core.errors import ResonanceError, ValidationError

__all__ = ["ProblemFormatError", "SandboxUnavailableError", "VerifyError"]


class VerifyError(ResonanceError):
    """Base class of user-caused errors in ``resonance_os.verify``."""


class ProblemFormatError(VerifyError, ValidationError):
    """A problem or test file is malformed: the message names the file, line and field."""


class SandboxUnavailableError(VerifyError):
    """The sandbox cannot run here (not root, no interpreter reachable); the message says what to do."""

    http_status = 503
