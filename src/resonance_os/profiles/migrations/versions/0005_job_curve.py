"""Jobs keep their learning curve.

- ``api_jobs`` gains ``curve`` (nullable JSON): the training metrics, one point per update, thinned to at
  most ``resonance_os.api.jobs.report.MAX_CURVE_POINTS``; ``GET /v1/jobs/{id}/metrics`` returns it.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_jobs") as batch:
        batch.add_column(sa.Column("curve", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_jobs") as batch:
        batch.drop_column("curve")
