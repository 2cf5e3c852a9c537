"""Alembic migrations of the one ResonanceOS database, applied by ``resonance_os.profiles.storage.migrate``
(on opening a profile store, and by ``resonance serve`` / ``Database.migrate`` for the service).

A new revision is a file in ``versions/`` with ``revision``/``down_revision`` and ``upgrade()``/
``downgrade()``; ``tests/profiles/test_schema.py`` checks that the revisions produce exactly the models'
schema and that a database made by an earlier build upgrades with every row kept.
"""
