"""Alembic environment: runs on the connection that ``resonance_os.api.db.migrate`` passes in."""

from __future__ import annotations

from alembic import context

from resonance_os.api.db import SERVICE_TABLES, Base


def _include_object(obj, name, type_, reflected, compare_to) -> bool:
    """Compare only the service's own tables (profile storage shares the database)."""
    if type_ == "table":
        return name in SERVICE_TABLES
    return True


connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    include_object=_include_object,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
