"""Why a Tinker request failed: the caller's fault (``category: "user"``) or ours (``"server"``).

The SDK raises either as ``RequestFailedError`` with the message; a user error is never retried."""

from __future__ import annotations


class TinkerError(Exception):
    """A request that fails its future with ``category``."""

    category = "server"


class UserError(TinkerError):
    """The request is wrong (a field, a name, a size); the message names the field and the fix."""

    category = "user"
