"""Merging a data home's old ``profiles.db`` into its one database, ``resonance.db``.

Before 0.2 the profile commands kept their own SQLite file, ``<home>/profiles.db``, beside the
service's ``<home>/resonance.db``, so a profile made in the Studio was missing from the command line
and the other way round. The first time ``resonance.db`` is opened (by any command or the server)
while ``profiles.db`` lies beside it, every tenant, profile and profile version of ``profiles.db`` is
copied in, in the same write transaction as the schema upgrade, and the old file is renamed
``profiles.db.merged`` (kept, never deleted):

- a tenant is matched by name (created if missing);
- a profile that ``resonance.db`` lacks is copied with its whole version history;
- a profile both hold with the same history (the same vectors version by version) is left as is;
- a profile both hold with different histories keeps ``resonance.db``'s under its name, and
  ``profiles.db``'s is copied, history included, as ``<name>.profiles-db`` (or ``-2``, ``-3``...).

Each merge is logged as a warning naming what was copied and where the old file went.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Connection, create_engine, select
from sqlalchemy.orm import Session, selectinload

from resonance_os.core.errors import StorageError
from resonance_os.core.home import DB_FILENAME, LEGACY_PROFILES_DB
from resonance_os.profiles.schema import NAME_MAX_LENGTH, ProfileRow, ProfileVersionRow, Tenant

log = logging.getLogger(__name__)

MERGED_SUFFIX = ".merged"
RENAMED_SUFFIX = ".profiles-db"
SQLITE_COMPANIONS = ("", "-wal", "-shm")
"""A SQLite database's files: the database, its write-ahead log and its shared-memory index."""


@dataclass
class MergeReport:
    """What a merge did: ``copied`` and ``renamed`` (``old key -> new key``) profiles, and where the old
    file now lies."""

    legacy_file: Path
    kept_as: Path
    copied: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    identical: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{len(self.copied)} profile(s) copied"]
        if self.renamed:
            parts.append(
                "kept beside a different one of the same name: "
                + ", ".join(f"{old} as {new}" for old, new in self.renamed.items())
            )
        if self.identical:
            parts.append(f"{len(self.identical)} already there")
        return (
            f"merged {self.legacy_file} into {self.legacy_file.with_name(DB_FILENAME)}: "
            + "; ".join(parts)
            + f"; the old file is kept as {self.kept_as}"
        )


def legacy_file_for(database: str | None) -> Path | None:
    """The old ``profiles.db`` beside the SQLite file ``database`` when that file is a data home's
    ``resonance.db`` and the old file exists; else None."""
    if not database or Path(database).name != DB_FILENAME:
        return None
    legacy = Path(database).with_name(LEGACY_PROFILES_DB)
    return legacy if legacy.is_file() else None


def _history(row: ProfileRow) -> list[tuple[int, list[float]]]:
    return [(v.version, [round(x, 9) for x in v.hrv]) for v in row.versions]


def _free_name(session: Session, tenant_id: int, name: str) -> str:
    taken = set(session.scalars(select(ProfileRow.name).where(ProfileRow.tenant_id == tenant_id)))
    base = name[: NAME_MAX_LENGTH - len(RENAMED_SUFFIX)] + RENAMED_SUFFIX
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base[: NAME_MAX_LENGTH - len(str(n)) - 1]}-{n}"
    return candidate


def _copy(session: Session, tenant_id: int, name: str, row: ProfileRow) -> None:
    copy = ProfileRow(
        tenant_id=tenant_id,
        name=name,
        description=row.description,
        hrv=list(row.hrv),
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
    copy.versions = [
        ProfileVersionRow(
            version=v.version, description=v.description, hrv=list(v.hrv), created_at=v.created_at
        )
        for v in row.versions
    ]
    session.add(copy)


def _read_legacy(legacy: Path, migrate) -> list[tuple[Tenant, list[ProfileRow]]]:
    engine = create_engine(f"sqlite:///{legacy}")
    try:
        migrate(engine)  # an old file may predate columns the copy reads
        with Session(engine) as session:
            tenants = session.scalars(select(Tenant).order_by(Tenant.id)).all()
            rows = session.scalars(
                select(ProfileRow).options(selectinload(ProfileRow.versions)).order_by(ProfileRow.id)
            ).all()
            by_tenant = {t.id: (t, []) for t in tenants}
            for row in rows:
                by_tenant[row.tenant_id][1].append(row)
            session.expunge_all()
        return list(by_tenant.values())
    finally:
        engine.dispose()  # the last connection's close checkpoints the old file's WAL into it


def merge_legacy_profiles(connection: Connection, legacy: Path, migrate) -> MergeReport:
    """Copy ``legacy``'s tenants and profiles into the database of ``connection`` (inside its open write
    transaction) and rename ``legacy`` to ``profiles.db.merged``; ``migrate`` upgrades the old file
    first. If the transaction does not commit, the caller renames the file back
    (:func:`restore_legacy`)."""
    content = _read_legacy(legacy, migrate)
    kept_as = _kept_name(legacy)
    report = MergeReport(legacy_file=legacy, kept_as=kept_as)
    session = Session(bind=connection)
    for tenant, rows in content:
        target = session.scalar(select(Tenant).where(Tenant.name == tenant.name))
        if target is None:
            target = Tenant(name=tenant.name, created_at=tenant.created_at)
            session.add(target)
            session.flush()
        for row in rows:
            key = f"{tenant.name}/{row.name}"
            existing = session.scalar(
                select(ProfileRow)
                .options(selectinload(ProfileRow.versions))
                .where(ProfileRow.tenant_id == target.id, ProfileRow.name == row.name)
            )
            if existing is None:
                _copy(session, target.id, row.name, row)
                report.copied.append(key)
            elif _history(existing) == _history(row):
                report.identical.append(key)
            else:
                new_name = _free_name(session, target.id, row.name)
                _copy(session, target.id, new_name, row)
                report.copied.append(key)
                report.renamed[key] = f"{tenant.name}/{new_name}"
            session.flush()
    session.close()
    for suffix in SQLITE_COMPANIONS:
        part = Path(f"{legacy}{suffix}")
        if part.exists():
            try:
                part.rename(f"{kept_as}{suffix}")
            except OSError as exc:
                restore_legacy(report)
                raise StorageError(
                    f"cannot rename {part} after merging it into {DB_FILENAME}: {exc.strerror or exc}; "
                    "make its folder writable"
                ) from None
    return report


def restore_legacy(report: MergeReport) -> None:
    """Undo the rename of a merge whose transaction did not commit."""
    for suffix in SQLITE_COMPANIONS:
        part = Path(f"{report.kept_as}{suffix}")
        if part.exists():
            part.rename(f"{report.legacy_file}{suffix}")


def _kept_name(legacy: Path) -> Path:
    kept, n = legacy.with_name(legacy.name + MERGED_SUFFIX), 1
    while kept.exists():
        n += 1
        kept = legacy.with_name(f"{legacy.name}{MERGED_SUFFIX}-{n}")
    return kept
