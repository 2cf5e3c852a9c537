"""The one rule for tenant and profile names, used by the profile store, profile folders and the service.

A name is 1-64 letters, digits, ``-``, ``_`` or ``.``, starting with a letter or digit and never
containing ``..``: it is safe as a file name (``<tenant>/<name>.json`` in a profile folder), in a URL
path and in a log line.
"""

from __future__ import annotations

import re

from resonance_os.core.errors import ValidationError
from resonance_os.profiles.schema import NAME_MAX_LENGTH

_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._-]{{0,{NAME_MAX_LENGTH - 1}}}")


def validate_name(value: object, kind: str = "profile") -> str:
    """Return ``value`` if it is a valid ``kind`` (``"tenant"`` or ``"profile"``) name, else raise a
    ``ValidationError`` naming the value and the rule."""
    rule = (
        f"{kind} names are 1-{NAME_MAX_LENGTH} letters, digits, '-', '_' or '.', starting with a letter "
        "or digit, with no path separators, spaces or '..'"
    )
    if not isinstance(value, str):
        raise ValidationError(f"{kind} name must be a string, got {type(value).__name__}; {rule}")
    if not _NAME.fullmatch(value) or ".." in value:
        raise ValidationError(f"invalid {kind} name {value!r}: {rule}")
    return value
