"""One schema: the profile tables join the migrations and one ``tenants`` table replaces ``api_tenants``.

Until this revision the profile store created ``tenants``, ``profiles`` and ``profile_versions`` itself
and the service kept its own ``api_tenants``. Upgrading:

1. creates the profile tables where missing (a service-only or empty database; a database the profile
   store made already has them, with the same definition);
2. copies every ``api_tenants`` row into ``tenants``; a name in both keeps the ``tenants`` row (and the
   earlier ``created_at``);
3. points ``tenant_id`` of the service's tables at ``tenants.id``, renumbered to the merged ids;
4. drops ``api_tenants``.

Downgrading restores ``api_tenants`` as a copy of ``tenants`` (same ids) and points the service's tables
back at it; the profile tables and their rows stay, as the profile store kept them before.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
SERVICE_TABLES = ("api_keys", "api_items", "api_feedback", "api_reward_models", "api_jobs")
FK_NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}
"""Names SQLite's unnamed foreign keys so batch mode can drop them."""


def _tenants_table(name: str) -> sa.Table:
    return sa.table(
        name, sa.column("id", sa.Integer), sa.column("name", sa.String), sa.column("created_at", TS)
    )


def _create_profile_tables(existing: set[str]) -> None:
    if "tenants" not in existing:
        op.create_table(
            "tenants",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("name", sa.String(64), nullable=False, unique=True),
            sa.Column("created_at", TS, nullable=False),
        )
    if "profiles" not in existing:
        op.create_table(
            "profiles",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column(
                "tenant_id", sa.Integer, sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
            ),
            sa.Column("name", sa.String(64), nullable=False),
            sa.Column("description", sa.Text, nullable=True),
            sa.Column("hrv", sa.JSON, nullable=False),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("created_at", TS, nullable=False),
            sa.Column("updated_at", TS, nullable=False),
            sa.UniqueConstraint("tenant_id", "name", name="uq_profile_tenant_name"),
        )
        op.create_index("ix_profiles_tenant_id", "profiles", ["tenant_id"])
    if "profile_versions" not in existing:
        op.create_table(
            "profile_versions",
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column(
                "profile_id", sa.Integer, sa.ForeignKey("profiles.id", ondelete="CASCADE"), nullable=False
            ),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("description", sa.Text, nullable=True),
            sa.Column("hrv", sa.JSON, nullable=False),
            sa.Column("created_at", TS, nullable=False),
            sa.UniqueConstraint("profile_id", "version", name="uq_profile_version"),
        )
        op.create_index("ix_profile_versions_profile_id", "profile_versions", ["profile_id"])


def _utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; every time stored is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _merge_tenants(connection: sa.Connection) -> dict[int, int]:
    """Copy ``api_tenants`` into ``tenants`` by name; return old id -> id in ``tenants``."""
    old, new = _tenants_table("api_tenants"), _tenants_table("tenants")
    ids: dict[int, int] = {}
    for old_id, name, created_at in connection.execute(sa.select(old.c.id, old.c.name, old.c.created_at)):
        row = connection.execute(sa.select(new.c.id, new.c.created_at).where(new.c.name == name)).first()
        if row is None:
            connection.execute(sa.insert(new).values(name=name, created_at=created_at))
            ids[old_id] = connection.execute(sa.select(new.c.id).where(new.c.name == name)).scalar_one()
            continue
        ids[old_id] = row.id
        if _utc(created_at) < _utc(row.created_at):
            connection.execute(sa.update(new).where(new.c.id == row.id).values(created_at=created_at))
    return ids


def _repoint(connection: sa.Connection, table: str, source: str, target: str, ids: dict[int, int]) -> None:
    """Move ``table.tenant_id``'s foreign key from ``source`` to ``target``, renumbering by ``ids``."""
    (old_fk,) = [
        fk for fk in sa.inspect(connection).get_foreign_keys(table) if fk["referred_table"] == source
    ]
    with op.batch_alter_table(table, naming_convention=FK_NAMING) as batch:
        batch.drop_constraint(old_fk["name"] or f"fk_{table}_tenant_id_{source}", type_="foreignkey")
    if any(old_id != new_id for old_id, new_id in ids.items()):
        # Through negative ids: unique constraints (tenant_id, version) are checked row by row, so
        # renumbering 1 -> 2 while another row still has 2 would clash.
        rows = sa.table(table, sa.column("tenant_id", sa.Integer))
        connection.execute(sa.update(rows).values(tenant_id=-rows.c.tenant_id))
        negated = {-old_id: new_id for old_id, new_id in ids.items()}
        connection.execute(sa.update(rows).values(tenant_id=sa.case(negated, value=rows.c.tenant_id)))
    with op.batch_alter_table(table) as batch:
        batch.create_foreign_key(
            f"fk_{table}_tenant_id_{target}", target, ["tenant_id"], ["id"], ondelete="CASCADE"
        )


def upgrade() -> None:
    connection = op.get_bind()
    _create_profile_tables(set(sa.inspect(connection).get_table_names()))
    ids = _merge_tenants(connection)
    for table in SERVICE_TABLES:
        _repoint(connection, table, "api_tenants", "tenants", ids)
    op.drop_table("api_tenants")


def downgrade() -> None:
    connection = op.get_bind()
    op.create_table(
        "api_tenants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
    )
    old, new = _tenants_table("api_tenants"), _tenants_table("tenants")
    connection.execute(sa.insert(old).from_select(["id", "name", "created_at"], sa.select(new)))
    if connection.dialect.name == "postgresql":  # explicit ids leave the serial sequence behind
        connection.exec_driver_sql(
            "SELECT setval(pg_get_serial_sequence('api_tenants', 'id'), COALESCE(MAX(id), 0) + 1, false) "
            "FROM api_tenants"
        )
    for table in SERVICE_TABLES:
        _repoint(connection, table, "tenants", "api_tenants", {})
