"""Agent Lightning's rollout store and OTLP spans (docs/agents.md).

- ``api_agl_rollouts``, ``api_agl_attempts``, ``api_agl_spans``, ``api_agl_resources``,
  ``api_agl_workers``: the store's rows, each owned by a tenant.
- ``api_agl_store_urls``: revocable store URLs (an HMAC of each token, a display prefix).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from resonance_os.profiles.schema import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ID = sa.String(64)
TIME = sa.Float


def _tenant_fk(table: str) -> sa.Column:
    return sa.Column(
        "tenant_id",
        sa.Integer,
        sa.ForeignKey("tenants.id", ondelete="CASCADE", name=f"fk_{table}_tenant_id_tenants"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "api_agl_rollouts",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk("api_agl_rollouts"),
        sa.Column("rollout_id", ID, nullable=False),
        sa.Column("input", sa.JSON, nullable=True),
        sa.Column("start_time", TIME, nullable=False),
        sa.Column("end_time", TIME, nullable=True),
        sa.Column("mode", sa.String(8), nullable=True),
        sa.Column("resources_id", ID, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=True),
        sa.Column("queued_at", TIME, nullable=True),
        sa.Column("span_sequence", sa.Integer, nullable=False),
        sa.UniqueConstraint("tenant_id", "rollout_id", name="uq_api_agl_rollouts_tenant_rollout"),
    )
    op.create_index("ix_api_agl_rollouts_queue", "api_agl_rollouts", ["tenant_id", "queued_at"])
    op.create_index("ix_api_agl_rollouts_status", "api_agl_rollouts", ["tenant_id", "status"])
    op.create_table(
        "api_agl_attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk("api_agl_attempts"),
        sa.Column("rollout_id", ID, nullable=False),
        sa.Column("attempt_id", ID, nullable=False),
        sa.Column("sequence_id", sa.Integer, nullable=False),
        sa.Column("start_time", TIME, nullable=False),
        sa.Column("end_time", TIME, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("worker_id", sa.String(256), nullable=True),
        sa.Column("last_heartbeat_time", TIME, nullable=True),
        sa.Column("metadata", sa.JSON, nullable=True),
        sa.UniqueConstraint("tenant_id", "rollout_id", "attempt_id", name="uq_api_agl_attempts_ids"),
    )
    op.create_table(
        "api_agl_spans",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        _tenant_fk("api_agl_spans"),
        sa.Column("rollout_id", ID, nullable=False),
        sa.Column("attempt_id", ID, nullable=False),
        sa.Column("sequence_id", sa.Integer, nullable=False),
        sa.Column("trace_id", sa.String(32), nullable=False),
        sa.Column("span_id", sa.String(16), nullable=False),
        sa.Column("parent_id", sa.String(16), nullable=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.UniqueConstraint("tenant_id", "rollout_id", "attempt_id", "span_id", name="uq_api_agl_spans_ids"),
    )
    op.create_index("ix_api_agl_spans_order", "api_agl_spans", ["tenant_id", "rollout_id", "sequence_id"])
    op.create_table(
        "api_agl_resources",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk("api_agl_resources"),
        sa.Column("resources_id", ID, nullable=False),
        sa.Column("create_time", TIME, nullable=False),
        sa.Column("update_time", TIME, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("resources", sa.JSON, nullable=False),
        sa.UniqueConstraint("tenant_id", "resources_id", name="uq_api_agl_resources_ids"),
    )
    op.create_table(
        "api_agl_workers",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk("api_agl_workers"),
        sa.Column("worker_id", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("heartbeat_stats", sa.JSON, nullable=True),
        sa.Column("last_heartbeat_time", TIME, nullable=True),
        sa.Column("last_dequeue_time", TIME, nullable=True),
        sa.Column("last_busy_time", TIME, nullable=True),
        sa.Column("last_idle_time", TIME, nullable=True),
        sa.Column("current_rollout_id", ID, nullable=True),
        sa.Column("current_attempt_id", ID, nullable=True),
        sa.UniqueConstraint("tenant_id", "worker_id", name="uq_api_agl_workers_ids"),
    )
    op.create_table(
        "api_agl_store_urls",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk("api_agl_store_urls"),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_index("ix_api_agl_store_urls_tenant_id", "api_agl_store_urls", ["tenant_id"])


def downgrade() -> None:
    for table in (
        "api_agl_store_urls",
        "api_agl_workers",
        "api_agl_resources",
        "api_agl_spans",
        "api_agl_attempts",
        "api_agl_rollouts",
    ):
        op.drop_table(table)
