"""Tenants' target HRV profiles: versioned storage, built-in templates and the default target.

``HRVExtractor`` is also importable from here, as in the original ResonanceOS; it and
``HRVProfileManager`` are loaded on first use, so the templates import without the database layer.
"""

from typing import TYPE_CHECKING, Any

from resonance_os.profiles.templates import (
    BUILTIN_TEMPLATES,
    BUILTIN_TENANT,
    DEFAULT_PROFILE,
    DEFAULT_PROFILE_NAME,
)

if TYPE_CHECKING:
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager, validate_name
    from resonance_os.profiling.hrv_extractor import HRVExtractor

__all__ = [
    "BUILTIN_TEMPLATES",
    "BUILTIN_TENANT",
    "DEFAULT_PROFILE",
    "DEFAULT_PROFILE_NAME",
    "HRVExtractor",
    "HRVProfileManager",
    "validate_name",
]


def __getattr__(name: str) -> Any:
    if name in ("HRVProfileManager", "validate_name"):
        from resonance_os.profiles import multi_tenant_hr_profiles

        return getattr(multi_tenant_hr_profiles, name)
    if name == "HRVExtractor":
        from resonance_os.profiling.hrv_extractor import HRVExtractor

        return HRVExtractor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
