"""Alembic environment: runs on the connection that ``resonance_os.profiles.storage.migrate`` passes in."""

from __future__ import annotations

from alembic import context

from resonance_os.profiles.schema import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,  # the service's tables join it when resonance_os.api.persistence.db is imported
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
