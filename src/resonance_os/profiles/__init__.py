"""Tenants' target HRV profiles: versioned storage, built-in templates and the default target."""

from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager, validate_name
from resonance_os.profiles.templates import (
    BUILTIN_TEMPLATES,
    BUILTIN_TENANT,
    DEFAULT_PROFILE,
    DEFAULT_PROFILE_NAME,
)

__all__ = [
    "BUILTIN_TEMPLATES",
    "BUILTIN_TENANT",
    "DEFAULT_PROFILE",
    "DEFAULT_PROFILE_NAME",
    "HRVProfileManager",
    "validate_name",
]
