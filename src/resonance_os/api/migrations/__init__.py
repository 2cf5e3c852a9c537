"""Alembic migrations of the service database, applied by ``resonance_os.api.db.migrate``.

A new revision is a file in ``versions/`` with ``revision``/``down_revision`` and ``upgrade()``/
``downgrade()``; ``tests/api/test_db.py`` checks that the revisions produce exactly the models' schema.
"""
