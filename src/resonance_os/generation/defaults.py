"""Where the writer's target comes from: an explicit HRV, a tenant profile, or the default profile."""

from __future__ import annotations

import os

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_types import HRVProfile, HRVVector, validate_hrv
from resonance_os.profiles.storage import default_store


def default_target() -> list[float]:
    """The documented default target: the built-in ``professional`` profile's vector."""
    from resonance_os.profiles.templates import DEFAULT_PROFILE

    return DEFAULT_PROFILE.vector.to_list()


def resolve_target(
    target_hrv: object = None, profile: object = None, store: str | os.PathLike[str] | None = None
) -> tuple[list[float], str]:
    """(target vector, where it came from) from at most one of ``target_hrv`` and ``profile``.

    ``profile`` is an ``HRVProfile`` or ``"tenant/name"``; the tenant ``builtin`` (or a bare template
    name such as ``"creative"``) reads the built-in templates, any other tenant the profile store
    (``store``, else ``$RESONANCE_STORE``, else ``~/.resonance_os``).
    """
    if target_hrv is not None and profile is not None:
        raise ValidationError("give either target_hrv or profile, not both; drop one of them")
    if target_hrv is not None:
        vector = (
            target_hrv.to_list()
            if isinstance(target_hrv, HRVVector)
            else validate_hrv(target_hrv, what="target HRV")
        )
        return vector, "target_hrv"
    if profile is None:
        from resonance_os.profiles.templates import DEFAULT_PROFILE

        return DEFAULT_PROFILE.vector.to_list(), f"default profile {DEFAULT_PROFILE.key}"
    if isinstance(profile, HRVProfile):
        return profile.vector.to_list(), f"profile {profile.key}"
    if not isinstance(profile, str) or not profile.strip():
        raise ValidationError(
            f"profile must be 'tenant/name' or an HRVProfile, got {profile!r}; e.g. profile='builtin/creative'"
        )
    from resonance_os.profiles.templates import BUILTIN_TEMPLATES, BUILTIN_TENANT

    key = profile.strip()
    tenant, _, name = key.rpartition("/")
    if not tenant:
        if name in BUILTIN_TEMPLATES:
            return BUILTIN_TEMPLATES[name].vector.to_list(), f"profile {BUILTIN_TENANT}/{name}"
        raise ValidationError(
            f"profile {key!r} is not 'tenant/name' and not a built-in template "
            f"({', '.join(sorted(BUILTIN_TEMPLATES))}); pass e.g. 'acme/newsletter' or 'builtin/creative'"
        )
    if tenant == BUILTIN_TENANT:
        if name not in BUILTIN_TEMPLATES:
            from resonance_os.core.errors import ProfileNotFoundError

            raise ProfileNotFoundError(
                f"no built-in profile {name!r}; built-in profiles: {', '.join(sorted(BUILTIN_TEMPLATES))}"
            )
        return BUILTIN_TEMPLATES[name].vector.to_list(), f"profile {key}"
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

    with HRVProfileManager(store if store is not None else default_store()) as manager:
        return manager.load_profile(tenant, name), f"profile {key}"
