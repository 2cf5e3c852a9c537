"""One database schema: a database made by the previous build (profile-store tables made by the store
itself, service tables at revision 0002 with their own ``api_tenants``) upgrades to the one ``tenants``
table with every row kept, through the service's migrate and through opening a profile store.

Runs on SQLite, and on PostgreSQL under ``make test-postgres`` (a fresh database per test)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from resonance_os.api.persistence.db import Database
from resonance_os.api.persistence.keys import display_prefix, hash_key, new_key
from resonance_os.api.persistence.tenants import authenticate, list_tenants
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
from resonance_os.profiles.storage import MIGRATIONS

HEAD = "0007"
SERVICE = ("api_keys", "api_items", "api_feedback", "api_reward_models", "api_jobs")
PROFILES = ("profiles", "profile_versions")
LATER_TABLES = (
    "api_usage",
    *("tinker_sessions", "tinker_models", "tinker_futures", "tinker_checkpoints", "tinker_samplers"),
    *("api_agl_rollouts", "api_agl_attempts", "api_agl_spans", "api_agl_resources", "api_agl_workers"),
    "api_agl_store_urls",
)
LATER_COLUMNS = {"api_jobs": {"checkpoint_timesteps", "resumed_from", "curve"}}
"""Tables and columns revisions after 0003 added (empty or NULL after an upgrade; left out of snapshots)."""
TS = sa.DateTime(timezone=True)
T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
HRV = [0.5, 0.6, 0.5, 0.6, 0.2, 0.1, 0.5, 0.9]
KEYS = {"acme": new_key(), "newco": new_key()}

# The profile store's tables as the previous build created them (Base.metadata.create_all in storage.py).
PREVIOUS_PROFILE_TABLES = sa.MetaData()
sa.Table(
    "tenants",
    PREVIOUS_PROFILE_TABLES,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(64), unique=True, nullable=False),
    sa.Column("created_at", TS, nullable=False),
)
sa.Table(
    "profiles",
    PREVIOUS_PROFILE_TABLES,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("tenant_id", sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("name", sa.String(64), nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("hrv", sa.JSON, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.Column("updated_at", TS, nullable=False),
    sa.UniqueConstraint("tenant_id", "name", name="uq_profile_tenant_name"),
)
sa.Table(
    "profile_versions",
    PREVIOUS_PROFILE_TABLES,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("profile_id", sa.ForeignKey("profiles.id", ondelete="CASCADE"), nullable=False, index=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("hrv", sa.JSON, nullable=False),
    sa.Column("created_at", TS, nullable=False),
    sa.UniqueConstraint("profile_id", "version", name="uq_profile_version"),
)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path, monkeypatch) -> Iterator[str]:
    """A URL of an empty database: a SQLite file, or a new database on $RESONANCE_TEST_DB_URL's server."""
    monkeypatch.setenv("RESONANCE_KEY_PEPPER", "schema-test")
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'previous.db'}"
        return
    server = os.environ.get("RESONANCE_TEST_DB_URL")
    if not server:
        pytest.skip("PostgreSQL only under `make test-postgres` ($RESONANCE_TEST_DB_URL unset)")
    url = sa.make_url(server)
    name = f"upgrade_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    yield url.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as connection:
        connection.exec_driver_sql(f'DROP DATABASE "{name}" WITH (FORCE)')
    admin.dispose()


def _alembic(connection: sa.Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _id(connection: sa.Connection, table: str, **where) -> int:
    clause = " AND ".join(f"{k} = :{k}" for k in where)
    return connection.execute(sa.text(f"SELECT id FROM {table} WHERE {clause}"), where).scalar_one()


def build_previous_database(url: str, *, profiles: bool, service: bool) -> None:
    """Tables and rows as the previous build left them; tenant ids clash between the two tenants tables
    (profile tenants zeta=1, acme=2; service tenants acme=1, newco=2)."""
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        if service:
            command.upgrade(_alembic(connection), "0002")
        if profiles:
            PREVIOUS_PROFILE_TABLES.create_all(connection)
            tenants = PREVIOUS_PROFILE_TABLES.tables["tenants"]
            for name in ("zeta", "acme"):
                connection.execute(sa.insert(tenants).values(name=name, created_at=T0))
            for tenant, name, versions in (("acme", "blog", 2), ("zeta", "notes", 1)):
                tenant_id = _id(connection, "tenants", name=tenant)
                connection.execute(
                    sa.insert(PREVIOUS_PROFILE_TABLES.tables["profiles"]).values(
                        tenant_id=tenant_id,
                        name=name,
                        description=f"{tenant} {name}",
                        hrv=HRV,
                        version=versions,
                        created_at=T0,
                        updated_at=T0,
                    )
                )
                profile_id = _id(connection, "profiles", name=name)
                for version in range(1, versions + 1):
                    connection.execute(
                        sa.insert(PREVIOUS_PROFILE_TABLES.tables["profile_versions"]).values(
                            profile_id=profile_id, version=version, description=None, hrv=HRV, created_at=T0
                        )
                    )
        if service:
            _fill_service_tables(connection)
    engine.dispose()


def _fill_service_tables(connection: sa.Connection) -> None:
    meta = sa.MetaData()
    meta.reflect(connection)
    t = meta.tables
    earlier = T0 - timedelta(days=30)
    for name in ("acme", "newco"):
        connection.execute(sa.insert(t["api_tenants"]).values(name=name, created_at=earlier))
    for name, key in KEYS.items():
        tenant_id = _id(connection, "api_tenants", name=name)
        connection.execute(
            sa.insert(t["api_keys"]).values(
                tenant_id=tenant_id, key_hash=hash_key(key), prefix=display_prefix(key), created_at=T0
            )
        )
        connection.execute(
            sa.insert(t["api_items"]).values(
                id=f"item-{name}",
                tenant_id=tenant_id,
                source="generated",
                prompt="tea",
                text=f"{name} text",
                hrv=HRV,
                target_hrv=HRV,
                profile_name="blog",
                resonance=0.9,
                policy=None,
                created_at=T0,
            )
        )
        connection.execute(
            sa.insert(t["api_feedback"]).values(
                id=f"fb-{name}",
                tenant_id=tenant_id,
                kind="rating",
                rating=4,
                target_hrv=HRV,
                item_a_id=f"item-{name}",
                item_a_text=f"{name} text",
                item_a_hrv=HRV,
                prompt="tea",
                created_at=T0,
            )
        )
        connection.execute(
            sa.insert(t["api_reward_models"]).values(
                tenant_id=tenant_id,
                version=1,
                params={"n": 1},
                weights=b"\x00\x01",
                metrics={},
                created_at=T0,
            )
        )
        connection.execute(
            sa.insert(t["api_jobs"]).values(
                id=f"job-{name}",
                tenant_id=tenant_id,
                kind="ppo",
                trainer="m:f",
                state="succeeded",
                params={"timesteps": 64},
                progress=1.0,
                metrics={},
                attempts=1,
                created_at=T0,
            )
        )


def snapshot(url: str, tenants_table: str) -> dict[str, list[dict]]:
    """Every row of every data table, ``tenant_id`` replaced by the tenant's name (ids may be renumbered)."""
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        existing = set(sa.inspect(connection).get_table_names())
        names = dict(connection.execute(sa.text(f"SELECT id, name FROM {tenants_table}")).all())
        rows = {"tenants": sorted(names.values())}
        for table in (*PROFILES, *SERVICE):
            if table not in existing:
                continue
            owner = (
                names
                if table in SERVICE
                else dict(connection.execute(sa.text("SELECT id, name FROM tenants")).all())
            )
            result = connection.execute(sa.text(f"SELECT * FROM {table} ORDER BY id")).mappings()
            rows[table] = [
                {
                    k: owner[v] if k == "tenant_id" else bytes(v) if isinstance(v, memoryview) else v
                    for k, v in r.items()
                    if k not in LATER_COLUMNS.get(table, ())
                }
                for r in result
            ]
    engine.dispose()
    return rows


@pytest.mark.parametrize(("profiles", "service"), [(True, True), (False, True), (True, False)])
def test_previous_database_upgrades_with_every_row(empty_url, profiles, service):
    build_previous_database(empty_url, profiles=profiles, service=service)
    before = snapshot(empty_url, "api_tenants" if service else "tenants")
    assert all(before.values())  # every table built holds rows
    if profiles:
        before["tenants"] = sorted(set(before["tenants"]) | set(snapshot(empty_url, "tenants")["tenants"]))
    if service:
        db = Database(empty_url)
        assert db.migrate() == HEAD
    else:  # a store the CLI made: opening it upgrades it
        HRVProfileManager(empty_url).close()
    after = snapshot(empty_url, "tenants")
    assert {table: after[table] for table in before} == before
    assert set(after) == {"tenants", *PROFILES, *SERVICE}
    engine = sa.create_engine(empty_url)
    with engine.connect() as connection:
        assert set(LATER_TABLES) <= set(sa.inspect(connection).get_table_names())
        assert connection.execute(sa.text("SELECT COUNT(*) FROM api_usage")).scalar_one() == 0
        if service:
            later = ", ".join(sorted(LATER_COLUMNS["api_jobs"]))
            assert set(connection.execute(sa.text(f"SELECT {later} FROM api_jobs")).all()) == {
                (None,) * len(LATER_COLUMNS["api_jobs"])
            }
    engine.dispose()
    assert all(after[table] == [] for table in set(after) - set(before))  # tables the upgrade added

    with HRVProfileManager(empty_url) as manager:
        assert manager.list_tenants() == ({"acme": 1, "zeta": 1} if profiles else {})
        manager.save_profile("newco", "launch", HRV)  # the service's tenant now owns profiles too
        if profiles:
            assert [p.version for p in manager.profile_history("acme", "blog")] == [1, 2]
    if service:
        listed = {t.name: t for t in list_tenants(db)}
        assert {"acme", "newco"} <= set(listed) and listed["acme"].active_keys == [
            display_prefix(KEYS["acme"])
        ]
        assert listed["acme"].created_at == T0 - timedelta(days=30)  # the earlier of the two rows
        for name, key in KEYS.items():
            ctx = authenticate(db, key)
            assert ctx is not None and ctx.tenant == name
        db.dispose()


def test_downgrade_restores_api_tenants_and_upgrades_again(empty_url):
    build_previous_database(empty_url, profiles=True, service=True)
    Database(empty_url).migrate()
    upgraded = snapshot(empty_url, "tenants")
    engine = sa.create_engine(empty_url)
    with engine.begin() as connection:
        command.downgrade(_alembic(connection), "0002")
    downgraded = snapshot(empty_url, "api_tenants")
    assert {t: downgraded[t] for t in SERVICE} == {t: upgraded[t] for t in SERVICE}
    with engine.begin() as connection:  # the restored table hands out fresh ids
        connection.execute(
            sa.text("INSERT INTO api_tenants (name, created_at) VALUES ('later', :t)"), {"t": T0}
        )
        connection.execute(sa.text("DELETE FROM api_tenants WHERE name = 'later'"))
    engine.dispose()
    assert Database(empty_url).migrate() == HEAD
    assert snapshot(empty_url, "tenants") == upgraded


def test_new_store_has_every_table_at_head(tmp_path):
    with HRVProfileManager(tmp_path / "store") as manager:
        engine = sa.create_engine(manager.location)
    with engine.connect() as connection:
        tables = set(sa.inspect(connection).get_table_names())
        revision = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar_one()
    engine.dispose()
    assert revision == HEAD
    assert tables == {"alembic_version", "tenants", *PROFILES, *SERVICE, *LATER_TABLES}
