"""The Tinker-compatible training service's tables (see :mod:`resonance_os.api.tinker.store`).

- ``tinker_sessions``, ``tinker_models``, ``tinker_futures`` (UNIQUE ``queue``, ``seq_id``),
  ``tinker_checkpoints`` (UNIQUE ``model_id``, ``kind``, ``name``), ``tinker_samplers``; each row belongs
  to a tenant.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from resonance_os.profiles.schema import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _tenant(table: str) -> sa.Column:
    return sa.Column(
        "tenant_id",
        sa.Integer,
        sa.ForeignKey("tenants.id", ondelete="CASCADE", name=f"fk_{table}_tenant_id_tenants"),
        nullable=False,
    )


def _index(table: str, column: str) -> None:
    op.create_index(f"ix_{table}_{column}", table, [column])


def upgrade() -> None:
    op.create_table(
        "tinker_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        _tenant("tinker_sessions"),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("user_metadata", sa.JSON, nullable=False),
        sa.Column("sdk_version", sa.String(32), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("heartbeat_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
    )
    _index("tinker_sessions", "tenant_id")
    op.create_table(
        "tinker_models",
        sa.Column("id", sa.String(128), primary_key=True),
        _tenant("tinker_models"),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("base_model", sa.String(200), nullable=False),
        sa.Column("lora", sa.JSON, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("user_metadata", sa.JSON, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("last_request_at", UTCDateTime, nullable=False),
    )
    _index("tinker_models", "tenant_id")
    _index("tinker_models", "session_id")
    op.create_table(
        "tinker_futures",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant("tinker_futures"),
        sa.Column("queue", sa.String(128), nullable=False),
        sa.Column("seq_id", sa.Integer, nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("request", sa.LargeBinary, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("result", sa.LargeBinary, nullable=True),
        sa.Column("result_format", sa.String(8), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("category", sa.String(16), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=True),
        sa.UniqueConstraint("queue", "seq_id", name="uq_tinker_futures_queue_seq"),
    )
    for column in ("tenant_id", "queue", "state"):
        _index("tinker_futures", column)
    op.create_table(
        "tinker_checkpoints",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant("tinker_checkpoints"),
        sa.Column("model_id", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("folder", sa.Text, nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("user_metadata", sa.JSON, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=True),
        sa.UniqueConstraint("model_id", "kind", "name", name="uq_tinker_checkpoints_name"),
    )
    _index("tinker_checkpoints", "tenant_id")
    _index("tinker_checkpoints", "model_id")
    op.create_table(
        "tinker_samplers",
        sa.Column("id", sa.String(160), primary_key=True),
        _tenant("tinker_samplers"),
        sa.Column("session_id", sa.String(64), nullable=False),
        sa.Column("base_model", sa.String(200), nullable=False),
        sa.Column("model_path", sa.Text, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
    )
    _index("tinker_samplers", "tenant_id")
    _index("tinker_samplers", "session_id")


def downgrade() -> None:
    for table in (
        "tinker_samplers",
        "tinker_checkpoints",
        "tinker_futures",
        "tinker_models",
        "tinker_sessions",
    ):
        op.drop_table(table)
