"""Tenants' target HRV profiles, versioned, in a SQL database.

>>> manager = HRVProfileManager("~/.resonance_os")            # folder: embedded SQLite inside
>>> manager.save_profile("acme", "blog", [0.5, 0.6, 0.5, 0.6, 0.2, 0.1, 0.5, 0.9])
>>> manager.load_profile("acme", "blog")                       # -> list of 8 floats
>>> manager.list_profiles("acme")                              # -> ["blog"]

Saving an existing name creates the next version (1, 2, 3, ...) and keeps every earlier one in
:meth:`HRVProfileManager.profile_history`. Tenant and profile names are 1-64 letters, digits,
``-``, ``_`` or ``.``, never ``..``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from resonance_os.core.errors import AlreadyExistsError, ProfileNotFoundError, ValidationError
from resonance_os.core.hrv_types import HRVProfile, validate_hrv
from resonance_os.profiles.names import validate_name
from resonance_os.profiles.profile_folder import FolderImport, import_profile_folder, profile_files
from resonance_os.profiles.schema import ProfileRow, ProfileVersionRow, Tenant, utcnow
from resonance_os.profiles.storage import ProfileStore, store_folder
from resonance_os.profiles.templates import BUILTIN_TEMPLATES, DEFAULT_PROFILE

__all__ = ["BUILTIN_TEMPLATES", "DEFAULT_PROFILE", "HRVProfileManager", "validate_name"]

log = logging.getLogger(__name__)

DESCRIPTION_MAX_LENGTH = 2000
_LISTED_NAMES = 20


def _validate_description(description: object) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str):
        raise ValidationError(f"description must be a string, got {type(description).__name__}")
    if len(description) > DESCRIPTION_MAX_LENGTH:
        raise ValidationError(
            f"description is {len(description)} characters; keep it under {DESCRIPTION_MAX_LENGTH}"
        )
    return description


def _to_profile(tenant: str, row: ProfileRow) -> HRVProfile:
    return HRVProfile(
        name=row.name,
        vector=row.hrv,
        tenant=tenant,
        description=row.description,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class HRVProfileManager:
    """Save, load, list, version and delete tenants' target HRVs.

    Args:
        path: a folder (created if missing; the SQLite file ``profiles.db`` is kept inside it, in
            WAL mode) or a SQLAlchemy URL such as ``sqlite:///profiles.db`` or
            ``postgresql+psycopg://user:pass@host/db``. A bad URL, a missing driver or an unwritable
            folder raises ``StorageError``. None (default): ``$RESONANCE_STORE`` (or the original's
            ``$HRV_TENANT_DIR``) if set, else ``~/.resonance_os``.
        base_dir: the original ResonanceOS's name for ``path`` (give one of the two).

    A folder that holds original ResonanceOS profile files (``<tenant>/<name>.json``) has them read
    into the store when the manager opens it (profiles already stored are kept; no file is changed);
    ``folder_import`` reports what happened (see :mod:`resonance_os.profiles.profile_folder`).

    Every method runs in one transaction; a manager may be shared by threads and by processes that
    open the same store.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, base_dir: str | os.PathLike[str] | None = None
    ) -> None:
        if path is not None and base_dir is not None:
            raise ValidationError("give path or base_dir (the original's name for it), not both")
        location = path if path is not None else base_dir
        self._store = ProfileStore(location)
        self.folder_import: FolderImport | None = None
        folder = store_folder(location)
        if folder is not None and profile_files(folder):
            self.folder_import = import_profile_folder(self, folder)
            for file, reason in self.folder_import.rejected:
                log.warning("not a profile, left out: %s: %s", file, reason)

    @property
    def location(self) -> str:
        """The database URL, password hidden."""
        return self._store.display_url

    def __repr__(self) -> str:
        return f"HRVProfileManager({self.location!r})"

    def close(self) -> None:
        """Release database connections (the manager cannot be used afterwards)."""
        self._store.close()

    def __enter__(self) -> HRVProfileManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- helpers run inside a transaction -----------------------------------------------------

    @staticmethod
    def _profile_row(session: Session, tenant: str, name: str, *, lock: bool = False) -> ProfileRow | None:
        query = (
            select(ProfileRow)
            .join(Tenant, ProfileRow.tenant_id == Tenant.id)
            .where(Tenant.name == tenant, ProfileRow.name == name)
        )
        if lock:  # row lock on server databases; SQLite renders nothing (BEGIN IMMEDIATE locks)
            query = query.with_for_update(of=ProfileRow)
        return session.scalar(query)

    @staticmethod
    def _names(session: Session, tenant: str) -> list[str]:
        return list(
            session.scalars(
                select(ProfileRow.name)
                .join(Tenant, ProfileRow.tenant_id == Tenant.id)
                .where(Tenant.name == tenant)
                .order_by(ProfileRow.name)
            )
        )

    def _require(self, session: Session, tenant: str, name: str) -> ProfileRow:
        row = self._profile_row(session, tenant, name)
        if row is not None:
            return row
        existing = self._names(session, tenant)
        if not existing:
            raise ProfileNotFoundError(
                f"no profile {name!r} for tenant {tenant!r}: the tenant has no profiles yet; "
                "create one with save_profile() or `resonance profiles create`"
            )
        shown = ", ".join(existing[:_LISTED_NAMES])
        more = f" and {len(existing) - _LISTED_NAMES} more" if len(existing) > _LISTED_NAMES else ""
        raise ProfileNotFoundError(
            f"no profile {name!r} for tenant {tenant!r}; existing profiles: {shown}{more}"
        )

    # -- public API ---------------------------------------------------------------------------

    def save_profile(
        self,
        tenant: str,
        name: str,
        hrv_vector: Iterable[float] | Mapping[str, float],
        description: str | None = None,
        *,
        must_exist: bool | None = None,
    ) -> HRVProfile:
        """Create ``tenant/name`` at version 1, or store its next version; return what was saved.

        ``hrv_vector`` is 8 floats in [0, 1] in ``HRV_DIMENSIONS`` order (or a name -> value map).
        On an update, ``description=None`` keeps the previous description. ``must_exist=False`` only
        creates (``AlreadyExistsError`` if the profile exists), ``must_exist=True`` only updates
        (``ProfileNotFoundError`` if it does not); the check and the write are one transaction, so of
        two simultaneous creates exactly one succeeds.
        """
        validate_name(tenant, "tenant")
        validate_name(name, "profile")
        values = validate_hrv(hrv_vector, what=f"profile {tenant}/{name}")
        description = _validate_description(description)

        def write(session: Session) -> HRVProfile:
            now = utcnow()
            tenant_row = session.scalar(select(Tenant).where(Tenant.name == tenant))
            if tenant_row is None:
                tenant_row = Tenant(name=tenant, created_at=now)
                session.add(tenant_row)
                session.flush()
            row = self._profile_row(session, tenant, name, lock=True)
            if row is not None and must_exist is False:
                raise AlreadyExistsError(f"profile {tenant}/{name} already exists (version {row.version})")
            if row is None and must_exist:
                self._require(session, tenant, name)  # raises ProfileNotFoundError listing what exists
            if row is None:
                row = ProfileRow(
                    tenant_id=tenant_row.id,
                    name=name,
                    description=description,
                    hrv=values,
                    version=1,
                    created_at=now,
                    updated_at=now,
                )
                session.add(row)
            else:
                row.version += 1
                row.hrv = values
                row.updated_at = now
                if description is not None:
                    row.description = description
            session.flush()
            session.add(
                ProfileVersionRow(
                    profile_id=row.id,
                    version=row.version,
                    description=row.description,
                    hrv=values,
                    created_at=now,
                )
            )
            return _to_profile(tenant, row)

        return self._store.write(write)

    def get_profile(self, tenant: str, name: str) -> HRVProfile:
        """The current version of ``tenant/name`` with its description, version and times (UTC).

        Raises ``ProfileNotFoundError`` (listing the tenant's profiles) when it does not exist.
        """
        validate_name(tenant, "tenant")
        validate_name(name, "profile")
        return self._store.read(lambda s: _to_profile(tenant, self._require(s, tenant, name)))

    def load_profile(self, tenant: str, name: str) -> list[float]:
        """The current HRV of ``tenant/name``: 8 floats in ``HRV_DIMENSIONS`` order."""
        return self.get_profile(tenant, name).vector.to_list()

    def list_profiles(self, tenant: str) -> list[str]:
        """Names of ``tenant``'s profiles, sorted (empty if none), as the original returned them;
        :meth:`get_profiles` gives the profiles themselves."""
        validate_name(tenant, "tenant")
        return self._store.read(lambda session: self._names(session, tenant))

    def get_profiles(self, tenant: str) -> list[HRVProfile]:
        """Current versions of every profile of ``tenant``, sorted by name (empty if none)."""
        validate_name(tenant, "tenant")

        def read(session: Session) -> list[HRVProfile]:
            rows = session.scalars(
                select(ProfileRow)
                .join(Tenant, ProfileRow.tenant_id == Tenant.id)
                .where(Tenant.name == tenant)
                .order_by(ProfileRow.name)
            )
            return [_to_profile(tenant, row) for row in rows]

        return self._store.read(read)

    def list_tenants(self) -> dict[str, int]:
        """Every tenant with at least one profile, mapped to its profile count, sorted by name."""

        def read(session: Session) -> dict[str, int]:
            rows = session.execute(
                select(Tenant.name, func.count(ProfileRow.id))
                .join(ProfileRow, ProfileRow.tenant_id == Tenant.id)
                .group_by(Tenant.name)
                .order_by(Tenant.name)
            )
            return {name: int(count) for name, count in rows}

        return self._store.read(read)

    def delete_profile(self, tenant: str, name: str) -> None:
        """Delete ``tenant/name`` and its whole history; ``ProfileNotFoundError`` if missing."""
        validate_name(tenant, "tenant")
        validate_name(name, "profile")

        def write(session: Session) -> None:
            session.delete(self._require(session, tenant, name))

        self._store.write(write)

    def profile_history(self, tenant: str, name: str) -> list[HRVProfile]:
        """Every saved version of ``tenant/name``, oldest first (the last is the current one).

        In each entry ``updated_at`` is when that version was saved.
        """
        validate_name(tenant, "tenant")
        validate_name(name, "profile")

        def read(session: Session) -> list[HRVProfile]:
            row = self._require(session, tenant, name)
            versions = session.scalars(
                select(ProfileVersionRow)
                .where(ProfileVersionRow.profile_id == row.id)
                .order_by(ProfileVersionRow.version)
            )
            return [
                HRVProfile(
                    name=name,
                    vector=v.hrv,
                    tenant=tenant,
                    description=v.description,
                    version=v.version,
                    created_at=row.created_at,
                    updated_at=v.created_at,
                )
                for v in versions
            ]

        return self._store.read(read)

    def profile_from_text(
        self,
        tenant: str,
        name: str,
        sample_text: str,
        description: str | None = None,
        *,
        must_exist: bool | None = None,
    ) -> HRVProfile:
        """Measure ``sample_text`` with ``HRVExtractor`` and save the result as ``tenant/name``
        (``must_exist`` as in :meth:`save_profile`).

        Without a description, one noting the sample's length is stored.
        """
        validate_name(tenant, "tenant")
        validate_name(name, "profile")
        # Imported here so that storing profiles does not load the extractor's lexicons.
        from resonance_os.profiling.hrv_extractor import HRVExtractor

        values = HRVExtractor().extract(sample_text)
        if description is None:
            description = f"Measured from a {len(sample_text.split())}-word sample text."
        return self.save_profile(tenant, name, values, description, must_exist=must_exist)

    def create_from_template(
        self,
        tenant: str,
        name: str,
        template: str,
        description: str | None = None,
        *,
        must_exist: bool | None = None,
    ) -> HRVProfile:
        """Save a copy of the built-in ``template`` (see ``BUILTIN_TEMPLATES``) as ``tenant/name``
        (``must_exist`` as in :meth:`save_profile`)."""
        if template not in BUILTIN_TEMPLATES:
            raise ValidationError(
                f"unknown template {template!r}; built-in templates: {', '.join(BUILTIN_TEMPLATES)}"
            )
        source = BUILTIN_TEMPLATES[template]
        return self.save_profile(
            tenant, name, source.vector.to_list(), description or source.description, must_exist=must_exist
        )
