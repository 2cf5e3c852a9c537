"""Where ResonanceOS keeps its data: one home folder holding the one database every command shares.

``$RESONANCE_HOME`` (default ``~/.resonance_os``) holds the database ``resonance.db`` that
``resonance serve``, ``resonance tenants`` and every command taking ``--store`` or ``--profile`` use
by default, the API-key pepper, training jobs' files and unpacked policies. ``$RESONANCE_DB`` names
another database for all of them (a SQLAlchemy URL or a SQLite file); ``$RESONANCE_STORE`` (the
original's ``$HRV_TENANT_DIR``) another one for the profile commands alone.

A location given by a user is read the same way everywhere (:func:`classify_location`): a URL names a
database; a path to an existing file, or ending in ``.db``/``.sqlite``/``.sqlite3``, is a SQLite file
(its folder must exist: nothing is created but the file); any other path is a data-home folder
(created if missing) with ``resonance.db`` inside.

Only path rules live here (no database driver is imported), so the command line starts fast.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from resonance_os.core.env import getenv
from resonance_os.core.errors import StorageError

HOME_ENV = "RESONANCE_HOME"
"""Environment variable naming the data home."""
DB_ENV = "RESONANCE_DB"
"""Environment variable naming the database of every command and the server."""
STORE_ENV = "RESONANCE_STORE"
"""Environment variable naming the profile commands' store (alias: the original's ``HRV_TENANT_DIR``)."""
DEFAULT_HOME = "~/.resonance_os"
DB_FILENAME = "resonance.db"
"""The one database's file name inside a data home."""
LEGACY_PROFILES_DB = "profiles.db"
"""The profile store's own file in a data home before 0.2; its rows are merged into ``resonance.db``."""
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""A path ending in one of these names a SQLite file, never a folder."""


def resonance_home() -> Path:
    """``$RESONANCE_HOME`` or ``~/.resonance_os``: the database, pepper, jobs and policy files live here."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def default_database() -> str:
    """``$RESONANCE_DB`` if set, else the data home (whose database is ``resonance.db``)."""
    return os.environ.get(DB_ENV) or str(resonance_home())


def default_store() -> str:
    """The profile commands' default: ``$RESONANCE_STORE`` (or ``$HRV_TENANT_DIR``), else
    :func:`default_database`."""
    return getenv(STORE_ENV) or default_database()


@dataclass(frozen=True)
class Location:
    """What a user's location names: a database ``url``, or a SQLite ``file`` (inside ``home`` when the
    location was a data-home folder)."""

    url: str | None = None
    file: Path | None = None
    home: Path | None = None


def classify_location(text: str) -> Location:
    """Read ``text`` as a database URL, a SQLite file or a data-home folder (see the module doc)."""
    if "://" in text:
        return Location(url=text)
    if not text.strip():
        raise StorageError("the database location is empty; pass a folder, a .db file or a database URL")
    path = Path(text).expanduser()
    if path.is_file() or (not path.is_dir() and path.suffix.lower() in SQLITE_SUFFIXES):
        return Location(file=path)
    return Location(file=path / DB_FILENAME, home=path)


def prepare_location(location: Location) -> Path:
    """The SQLite file of a file or home location, its folder checked (a home is created if missing)."""
    assert location.file is not None
    folder = location.file.parent
    if location.home is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(
                f"cannot create the data folder {str(folder)!r}: {exc.strerror or exc}; "
                f"pass a writable folder, a .db file or a database URL (or set ${HOME_ENV})"
            ) from None
    elif not folder.is_dir():
        raise StorageError(
            f"the folder {str(folder)!r} of the database file {str(location.file)!r} does not exist; "
            "create it first, or pass an existing folder"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StorageError(f"the folder {str(folder)!r} is not writable; pass a writable folder")
    return location.file
