"""Environment variables: our ``RESONANCE_*`` names, with the original ResonanceOS names as aliases.

``RESONANCE_HOST``/``RESONANCE_PORT`` (the REST service's address) and ``RESONANCE_STORE`` (the profile
store) are also read as ``API_HOST``, ``API_PORT`` and ``HRV_TENANT_DIR``, the names the original
documented; when both are set, the ``RESONANCE_*`` name wins.
"""

from __future__ import annotations

import os

LEGACY_ALIASES: dict[str, str] = {
    "RESONANCE_HOST": "API_HOST",
    "RESONANCE_PORT": "API_PORT",
    "RESONANCE_STORE": "HRV_TENANT_DIR",
}
"""Our variable -> the original ResonanceOS variable read when ours is unset."""


def env_names(name: str) -> list[str]:
    """``name`` followed by its original ResonanceOS alias, if it has one (for CLI ``envvar=`` lists)."""
    return [name, LEGACY_ALIASES[name]] if name in LEGACY_ALIASES else [name]


def getenv(name: str, default: str | None = None) -> str | None:
    """The first non-empty value of ``name`` or its alias, else ``default``."""
    for candidate in env_names(name):
        value = os.environ.get(candidate)
        if value:
            return value
    return default
