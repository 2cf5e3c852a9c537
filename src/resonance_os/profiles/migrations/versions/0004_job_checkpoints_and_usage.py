"""Jobs remember their checkpoints; tenants' stored rows and bytes are counted for storage quotas.

- ``api_jobs`` gains ``checkpoint_timesteps`` (timesteps in the job's newest checkpoint) and
  ``resumed_from`` (timesteps of the checkpoint the current attempt started from), both nullable.
- ``api_usage`` (one row per tenant: ``rows``, ``bytes``) is created empty; the service fills a tenant's
  row from its stored items, feedback and profile versions the first time it stores something.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_jobs") as batch:
        batch.add_column(sa.Column("checkpoint_timesteps", sa.Integer, nullable=True))
        batch.add_column(sa.Column("resumed_from", sa.Integer, nullable=True))
    op.create_table(
        "api_usage",
        sa.Column(
            "tenant_id",
            sa.Integer,
            sa.ForeignKey("tenants.id", ondelete="CASCADE", name="fk_api_usage_tenant_id_tenants"),
            primary_key=True,
        ),
        sa.Column("rows", sa.BigInteger, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("api_usage")
    with op.batch_alter_table("api_jobs") as batch:
        batch.drop_column("resumed_from")
        batch.drop_column("checkpoint_timesteps")
