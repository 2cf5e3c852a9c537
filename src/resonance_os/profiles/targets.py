"""Target resolution: the one place an explicit HRV, a profile key or nothing becomes a target vector.

The edges (API, CLI, evolution) call :func:`resolve_target` and pass the vector down; the writer and
the rest of generation never open the profile database.

>>> resolve_target()                                   # ([0.42, 0.55, ...], "default profile builtin/professional")
>>> resolve_target(profile="builtin/creative")         # a built-in template
>>> resolve_target(profile="acme/newsletter")          # a stored profile (store: folder, URL or manager)
>>> resolve_target(profile="newsletter", tenant="acme", store=manager)   # within one tenant (the API)
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext

from resonance_os.core.errors import ProfileNotFoundError, ValidationError
from resonance_os.core.hrv_types import HRVProfile, HRVVector, default_target, validate_hrv
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
from resonance_os.profiles.templates import BUILTIN_TEMPLATES, BUILTIN_TENANT, DEFAULT_PROFILE

__all__ = ["Store", "default_target", "resolve_target", "resolve_target_item"]

Store = str | os.PathLike[str] | HRVProfileManager
"""Where stored profiles are read: a folder or SQLAlchemy URL (opened for the call), or an open manager."""


def resolve_target(
    target_hrv: object = None,
    profile: object = None,
    store: Store | None = None,
    *,
    tenant: str | None = None,
) -> tuple[list[float], str]:
    """(target vector, where it came from) from at most one of ``target_hrv`` and ``profile``.

    Args:
        target_hrv: 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order, a name -> value mapping or an
            ``HRVVector``.
        profile: an ``HRVProfile`` or a key. Without ``tenant`` the key is ``"tenant/name"``: tenant
            ``builtin`` (or a bare template name such as ``"creative"``) reads the built-in templates,
            any other tenant the profile store. With ``tenant`` the key is a bare name in that tenant's
            namespace: the tenant's own profile, else the built-in template of that name; another
            tenant's profile is refused.
        store: the profile store (see :data:`Store`); default ``$RESONANCE_STORE``, else
            ``~/.resonance_os``. Opened only when a stored profile is asked for.
        tenant: resolve ``profile`` within this tenant only (the service passes the caller's tenant).

    Neither given: the default profile (``builtin/professional``). The source is ``"target_hrv"``,
    ``"profile tenant/name"`` or ``"default profile builtin/professional"``.

    Raises ``ValidationError`` for both given, a malformed HRV or key, ``ProfileNotFoundError`` for an
    unknown profile, ``StorageError`` when the store cannot be opened.
    """
    if target_hrv is not None and profile is not None:
        raise ValidationError("give either target_hrv or profile, not both; drop one of them")
    if target_hrv is not None:
        if isinstance(target_hrv, HRVVector):
            return target_hrv.to_list(), "target_hrv"
        return validate_hrv(target_hrv, what="target HRV"), "target_hrv"
    if profile is None:
        return default_target(), f"default profile {DEFAULT_PROFILE.key}"
    if isinstance(profile, HRVProfile):
        return profile.vector.to_list(), f"profile {profile.key}"
    if not isinstance(profile, str) or not profile.strip():
        raise ValidationError(
            f"profile must be 'tenant/name' or an HRVProfile, got {profile!r}; e.g. profile='builtin/creative'"
        )
    key = profile.strip()
    if tenant is not None:
        return _resolve_in_tenant(tenant, key, store)
    owner, _, name = key.rpartition("/")
    if not owner:
        if name in BUILTIN_TEMPLATES:
            return _builtin(name)
        raise ValidationError(
            f"profile {key!r} is not 'tenant/name' and not a built-in template "
            f"({', '.join(sorted(BUILTIN_TEMPLATES))}); pass e.g. 'acme/newsletter' or 'builtin/creative'"
        )
    if owner == BUILTIN_TENANT:
        if name not in BUILTIN_TEMPLATES:
            raise ProfileNotFoundError(
                f"no built-in profile {name!r}; built-in profiles: {', '.join(sorted(BUILTIN_TEMPLATES))}"
            )
        return _builtin(name)
    with _open(store) as manager:
        return manager.load_profile(owner, name), f"profile {key}"


def resolve_target_item(item: object, store: Store | None = None) -> tuple[list[float], str]:
    """One entry of a list of targets: a profile key or ``HRVProfile`` resolves as ``profile``, anything
    else (a vector, a mapping, an ``HRVVector``) as ``target_hrv`` of :func:`resolve_target`."""
    if isinstance(item, (str, HRVProfile)):
        return resolve_target(profile=item, store=store)
    return resolve_target(target_hrv=item, store=store)


def _resolve_in_tenant(tenant: str, name: str, store: Store | None) -> tuple[list[float], str]:
    if "/" in name:
        raise ValidationError(
            f"profile {name!r} is not a profile name of tenant {tenant!r}: profiles are named within "
            "your tenant (e.g. 'newsletter'); built-in templates by their bare name (e.g. 'creative')"
        )
    with _open(store) as manager:
        try:
            return manager.load_profile(tenant, name), f"profile {tenant}/{name}"
        except ProfileNotFoundError:
            if name in BUILTIN_TEMPLATES:
                return _builtin(name)
            raise


def _builtin(name: str) -> tuple[list[float], str]:
    return BUILTIN_TEMPLATES[name].vector.to_list(), f"profile {BUILTIN_TENANT}/{name}"


def _open(store: Store | None) -> AbstractContextManager[HRVProfileManager]:
    """An open manager is used as is (and left open); a location is opened for one call."""
    if isinstance(store, HRVProfileManager):
        return nullcontext(store)
    return HRVProfileManager(store)
