"""Initial service schema: api_tenants, api_keys, items, feedback, reward_models, jobs (0003 merges
api_tenants into the one tenants table).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def _tenant_fk() -> sa.Column:
    return sa.Column(
        "tenant_id", sa.Integer, sa.ForeignKey("api_tenants.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "api_tenants",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk(),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS, nullable=True),
    )
    op.create_index("ix_api_keys_tenant_id", "api_keys", ["tenant_id"])
    op.create_table(
        "api_items",
        sa.Column("id", sa.String(32), primary_key=True),
        _tenant_fk(),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("prompt", sa.Text, nullable=True),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("hrv", sa.JSON, nullable=False),
        sa.Column("target_hrv", sa.JSON, nullable=True),
        sa.Column("profile_name", sa.String(64), nullable=True),
        sa.Column("resonance", sa.Float, nullable=True),
        sa.Column("policy", sa.String(32), nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_api_items_tenant_id", "api_items", ["tenant_id"])
    op.create_table(
        "api_feedback",
        sa.Column("id", sa.String(32), primary_key=True),
        _tenant_fk(),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("rating", sa.Integer, nullable=True),
        sa.Column("preferred", sa.String(1), nullable=True),
        sa.Column("target_hrv", sa.JSON, nullable=False),
        sa.Column("item_a_id", sa.String(32), nullable=True),
        sa.Column("item_a_text", sa.Text, nullable=False),
        sa.Column("item_a_hrv", sa.JSON, nullable=False),
        sa.Column("item_b_id", sa.String(32), nullable=True),
        sa.Column("item_b_text", sa.Text, nullable=True),
        sa.Column("item_b_hrv", sa.JSON, nullable=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_api_feedback_tenant_id", "api_feedback", ["tenant_id"])
    op.create_table(
        "api_reward_models",
        sa.Column("id", sa.Integer, primary_key=True),
        _tenant_fk(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("weights", sa.LargeBinary, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("tenant_id", "version", name="uq_api_reward_models_tenant_version"),
    )
    op.create_index("ix_api_reward_models_tenant_id", "api_reward_models", ["tenant_id"])
    op.create_table(
        "api_jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        _tenant_fk(),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("trainer", sa.String(200), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
        sa.Column("progress", sa.Float, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("artifact", sa.LargeBinary, nullable=True),
        sa.Column("pid", sa.Integer, nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("heartbeat_at", TS, nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("started_at", TS, nullable=True),
        sa.Column("finished_at", TS, nullable=True),
    )
    op.create_index("ix_api_jobs_tenant_id", "api_jobs", ["tenant_id"])
    op.create_index("ix_api_jobs_state", "api_jobs", ["state"])


def downgrade() -> None:
    for table in ("api_jobs", "api_reward_models", "api_feedback", "api_items", "api_keys", "api_tenants"):
        op.drop_table(table)
