"""The ResonanceError family: every user-facing failure names the bad value and the fix.

The CLI prints ``str(error)`` on one line and exits 2; the API maps ``error.http_status`` to a
``{"error": {"type", "message"}}`` body.
"""

from __future__ import annotations


class ResonanceError(Exception):
    """Base class of every error a user can cause; never raised for our own bugs."""

    http_status: int = 400

    @property
    def type_name(self) -> str:
        return type(self).__name__


class ValidationError(ResonanceError, ValueError):
    """A value supplied by the user is malformed (empty text, bad name, out-of-range number)."""

    http_status = 422


class InvalidHRVError(ValidationError):
    """An HRV has the wrong length, a non-finite value, or a value outside [0, 1]."""


class AlreadyExistsError(ValidationError):
    """A tenant or profile with that name already exists (creating it again is refused)."""

    http_status = 409


class NotFoundError(ResonanceError, LookupError):
    """A named object does not exist."""

    http_status = 404


class ProfileNotFoundError(NotFoundError, FileNotFoundError):
    """A tenant's profile does not exist; the message lists the profiles that do.

    Also a ``FileNotFoundError``, as the original ResonanceOS promised for a missing profile file.
    """


class StorageError(ResonanceError):
    """The database or a file could not be read or written (bad URL, unwritable folder)."""

    http_status = 500


class BusyError(ResonanceError):
    """The service cannot do the work in time (a request's time budget ran out, or too many are waiting);
    retrying later, or asking for less, succeeds."""

    http_status = 503
