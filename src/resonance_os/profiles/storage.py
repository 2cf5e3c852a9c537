"""Where profiles live: a store that runs each operation in one transaction, and the schema migrations.

The tables are declared in :mod:`resonance_os.profiles.schema`; opening a store runs :func:`migrate`,
which creates them on a new database and upgrades one made by an earlier build, and merges a data
home's old ``profiles.db`` into its ``resonance.db`` (:mod:`resonance_os.profiles.legacy_store`). A store
is opened from a data-home folder (its SQLite file ``resonance.db``, the database ``resonance serve``
uses too), a SQLite file (``path.db``) or a SQLAlchemy URL (``postgresql+psycopg://user:pass@host/db``);
see :mod:`resonance_os.core.home`.

SQLite is opened in WAL mode (readers never block the writer) with a 30 s busy timeout, and every
write transaction starts with ``BEGIN IMMEDIATE``: it takes the write lock before it reads, so two
processes updating the same profile queue up instead of both reading version n and one update being
lost. On other databases a write locks the profile row (``SELECT ... FOR UPDATE``). A race that still
ends in a unique-constraint clash (two processes creating the same tenant at once) is retried.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from resonance_os.core.errors import StorageError
from resonance_os.core.home import classify_location, default_store, prepare_location

T = TypeVar("T")
log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
WRITE_ATTEMPTS = 5


def store_folder(location: str | os.PathLike[str] | None) -> Path | None:
    """The data-home folder a store location names (None: :func:`default_store`), or None for a
    database URL or a SQLite file."""
    return classify_location(default_store() if location is None else os.fspath(location)).home


def resolve_url(location: str | os.PathLike[str] | None) -> URL:
    """The database URL of a location (None: :func:`default_store`): a URL as is, a SQLite file, or a
    data-home folder's ``resonance.db`` (the folder created if missing); see
    :func:`resonance_os.core.home.classify_location`."""
    where = classify_location(default_store() if location is None else os.fspath(location))
    if where.url is not None:
        try:
            return make_url(where.url)
        except ArgumentError:
            raise StorageError(
                f"{where.url!r} is not a valid database URL; use e.g. sqlite:///resonance.db, "
                "postgresql+psycopg://user:pass@host/db, or a folder path"
            ) from None
    return URL.create("sqlite", database=str(prepare_location(where)))


def _is_memory_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


WRITE_OPTION = "resonance_write"
"""Execution option that makes a SQLite transaction start with ``BEGIN IMMEDIATE`` (see ``configure_sqlite``)."""


def _set_wal(cursor) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another process holds the lock: switching a new
    database to WAL needs an exclusive lock, and SQLite reports "database is locked" at once instead
    of waiting out the busy timeout when two processes open the same new file together."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def create_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist, before SQLite opens it: SQLite would
    create it with the umask's mode (often world-readable), and its -wal and -shm files copy the mode
    of the database file."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError as exc:
        raise StorageError(f"cannot create the database file {path}: {exc}") from None


def configure_sqlite(engine: Engine, memory: bool = False) -> None:
    """WAL (file databases), a long busy timeout, foreign keys, and ``BEGIN IMMEDIATE`` for connections
    run with ``execution_options(resonance_write=True)``, so a writer takes SQLite's write lock at
    ``BEGIN`` (waiting for it) instead of failing on a lock upgrade half-way through a transaction."""

    if not memory and not _is_memory_sqlite(engine.url) and not engine.url.database.startswith("file:"):
        create_private_file(Path(engine.url.database))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        # Let SQLAlchemy's "begin" event below emit BEGIN itself (pysqlite would defer it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not memory:
            _set_wal(cursor)
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:
        writing = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")


class ProfileStore:
    """An open database of tenants, profiles and profile versions.

    ``read(fn)`` and ``write(fn)`` call ``fn(session)`` inside one transaction and commit (write) or
    roll back (read, or on any error), so no operation leaves half-written rows.
    """

    def __init__(self, location: str | os.PathLike[str] | None) -> None:
        url = resolve_url(location)
        shown = url.render_as_string(hide_password=True)
        self.display_url = shown
        kwargs: dict[str, object] = {"hide_parameters": True}  # errors never quote tenant text
        backend = ""
        memory = False
        try:
            backend = url.get_backend_name()
            if backend == "sqlite":
                memory = _is_memory_sqlite(url)
                kwargs["connect_args"] = {"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
                if memory:
                    kwargs["poolclass"] = StaticPool
            engine = create_engine(url, **kwargs)
        except (ArgumentError, NoSuchModuleError, ImportError) as exc:
            raise StorageError(
                f"cannot open database URL {shown!r}: {exc}; check the dialect name and that "
                "its driver is installed (e.g. psycopg for postgresql+psycopg://)"
            ) from None
        if backend == "sqlite":
            configure_sqlite(engine, memory)
        self.engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        try:
            migrate(engine)
        except StorageError:
            engine.dispose()
            raise

    def read(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` in a read transaction."""
        try:
            with Session(self.engine, expire_on_commit=False) as session:
                with session.begin():
                    return fn(session)
        except OperationalError as exc:
            raise StorageError(f"reading {self.display_url!r} failed: {_reason(exc)}") from None

    def write(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` in one write transaction, committed only if ``fn`` returns.

        Retries a few times when a concurrent writer wins a uniqueness race or the database stays
        locked past the busy timeout; ``fn`` must therefore be safe to re-run from scratch.
        """
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with Session(self._writer, expire_on_commit=False) as session:
                    with session.begin():
                        return fn(session)
            except (IntegrityError, OperationalError) as exc:
                retryable = isinstance(exc, IntegrityError) or "locked" in str(exc.orig)
                if not retryable or attempt == WRITE_ATTEMPTS:
                    raise StorageError(f"writing to {self.display_url!r} failed: {_reason(exc)}") from None
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.engine.dispose()


MIGRATIONS = Path(__file__).with_name("migrations")
"""The Alembic migrations that create and upgrade every table (see :mod:`resonance_os.profiles.schema`)."""

PG_MIGRATION_LOCK = 72511
"""PostgreSQL advisory-lock key that serialises concurrent :func:`migrate` calls."""


def migrate(engine: Engine) -> str:
    """Upgrade the database behind ``engine`` to the newest revision and return that revision id.

    Creates every table on an empty database and upgrades one made by an earlier build (its rows kept);
    a data home's ``resonance.db`` also takes in the old ``profiles.db`` beside it, in the same
    transaction (:mod:`resonance_os.profiles.legacy_store`). Concurrent callers (several processes
    opening one new database) are serialised: on PostgreSQL with an advisory lock, on SQLite by the
    write lock ``BEGIN IMMEDIATE`` takes.
    """
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    from resonance_os.profiles.legacy_store import (
        legacy_file_for,
        merge_legacy_profiles,
        restore_legacy,
    )

    merged = None
    try:
        with engine.connect() as plain:
            connection = plain.execution_options(**{WRITE_OPTION: True})
            with connection.begin():
                if engine.dialect.name == "postgresql":
                    connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_MIGRATION_LOCK})")
                config = Config()
                config.set_main_option("script_location", str(MIGRATIONS))
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
                revision = MigrationContext.configure(connection).get_current_revision()
                legacy = legacy_file_for(engine.url.database) if engine.dialect.name == "sqlite" else None
                if legacy is not None:  # checked under the write lock: one process merges it
                    merged = merge_legacy_profiles(connection, legacy, migrate)
    except SQLAlchemyError as exc:
        if merged is not None:
            restore_legacy(merged)
        url = engine.url.render_as_string(hide_password=True)
        raise StorageError(f"cannot open the database {url!r}: {_reason(exc)}") from None
    except BaseException:
        if merged is not None:
            restore_legacy(merged)
        raise
    if merged is not None:
        log.warning("%s", merged.summary())
    return revision or ""


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]
