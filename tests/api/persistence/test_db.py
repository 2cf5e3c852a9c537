"""The service database: migrations build exactly the models' schema (every table, profiles included),
idempotently, on SQLite and by URL."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from resonance_os.api.persistence.db import Database, resolve_db_url
from resonance_os.profiles.schema import Base

HEAD = "0007"


def test_migrations_match_models_and_are_idempotent(db):
    assert db.migrate() == db.migrate() == HEAD
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
        tables = set(sa.inspect(connection).get_table_names())
    assert set(Base.metadata.tables) | {"alembic_version"} == tables
    assert {"tenants", "profiles", "profile_versions", "api_keys", "api_jobs"} <= tables


def test_sqlite_default_is_a_wal_file_under_resonance_home(resonance_home, monkeypatch):
    monkeypatch.setenv("RESONANCE_DB", str(resonance_home / "data"))
    (resonance_home / "data").mkdir(parents=True)
    database = Database()
    assert database.url == f"sqlite:///{(resonance_home / 'data' / 'resonance.db').resolve()}"
    database.migrate()
    with database.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    database.dispose()


def test_urls_pass_through_and_paths_become_sqlite_urls(tmp_path):
    url = "postgresql+psycopg://user:secret@127.0.0.1:5432/resonance"
    assert resolve_db_url(url) == url
    assert resolve_db_url(tmp_path / "x.db") == f"sqlite:///{(tmp_path / 'x.db').resolve()}"
    assert "secret" not in Database(url).redacted_url


def test_concurrent_first_starts_migrate_once_without_errors(db_url, tmp_path):
    import subprocess
    import sys

    url = db_url if not db_url.startswith("sqlite") else f"sqlite:///{tmp_path / 'race.db'}"
    script = "import sys; from resonance_os.api.persistence.db import Database; print(Database(sys.argv[1]).migrate())"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    assert [out.strip() for out, _ in outputs] == [HEAD] * 3
