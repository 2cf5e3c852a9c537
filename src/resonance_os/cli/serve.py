"""``resonance serve`` (run the REST service) and ``resonance tenants ...`` (tenants and API keys)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.core.env import env_names

DB_HELP = (
    "Database: a URL (postgresql+psycopg://...), a .db file or a data-home folder (its resonance.db);"
    " default $RESONANCE_DB, else $RESONANCE_HOME (~/.resonance_os), the database the profile commands use."
)

tenants_app = typer.Typer(
    help="Create tenants and manage their API keys and agent store URLs.", no_args_is_help=True
)
console = Console(highlight=False)


def serve(
    host: str = typer.Option("127.0.0.1", envvar=env_names("RESONANCE_HOST"), help="Interface to listen on."),
    port: int = typer.Option(8000, min=1, max=65535, envvar=env_names("RESONANCE_PORT"), help="TCP port."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
    workers: int = typer.Option(1, min=1, max=64, help="Server worker processes."),
) -> None:
    """Run the ResonanceOS REST service under uvicorn (OpenAPI docs at /docs)."""
    from resonance_os.api.hr_server import serve as run_server

    run_reporting_user_errors(lambda: run_server(host, port, db, workers))


def _database(db: str | None):
    from resonance_os.api.persistence.db import Database

    database = Database(db)
    database.migrate()
    return database


@tenants_app.command("create")
def create(
    name: str = typer.Argument(..., help="Tenant name: letters, digits, '-', '_', '.'."),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Create a tenant; its API key is printed as the last line (store it: only its hash is kept)."""
    from resonance_os.api.persistence.tenants import create_tenant

    key = run_reporting_user_errors(lambda: create_tenant(_database(db), name))
    console.print(f"created tenant {name}; API key (shown once):")
    print(key)


@tenants_app.command("list")
def list_(db: str = typer.Option(None, "--db", help=DB_HELP)) -> None:
    """List tenants with their active key prefixes."""
    from resonance_os.api.persistence.tenants import list_tenants

    tenants = run_reporting_user_errors(lambda: list_tenants(_database(db)))
    table = Table("tenant", "created (UTC)", "active keys", "revoked keys")
    for t in tenants:
        table.add_row(
            t.name, f"{t.created_at:%Y-%m-%d %H:%M}", ", ".join(t.active_keys) or "-", str(t.revoked_keys)
        )
    console.print(table)


@tenants_app.command("revoke-key")
def revoke_key(
    name: str = typer.Argument(..., help="Tenant name."),
    prefix: str = typer.Option(
        None, help="Revoke only the key with this display prefix (from `tenants list`)."
    ),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Revoke a tenant's keys (all active ones, or the one with --prefix); requests with them get 401."""
    from resonance_os.api.persistence.tenants import revoke_keys

    count = run_reporting_user_errors(lambda: revoke_keys(_database(db), name, prefix))
    console.print(f"revoked {count} key(s) of tenant {name}")


@tenants_app.command("rotate-key")
def rotate_key(
    name: str = typer.Argument(..., help="Tenant name."), db: str = typer.Option(None, "--db", help=DB_HELP)
) -> None:
    """Revoke every active key of a tenant and print a new one as the last line."""
    from resonance_os.api.persistence.tenants import rotate_key as rotate

    key = run_reporting_user_errors(lambda: rotate(_database(db), name))
    console.print(f"rotated the keys of tenant {name}; new API key (shown once):")
    print(key)


@tenants_app.command("store-url")
def store_url(
    name: str = typer.Argument(..., help="Tenant name."),
    base_url: str = typer.Option(
        "http://127.0.0.1:8000",
        help="The address runners reach the server at (as `resonance serve` listens).",
    ),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Print a new store URL for the tenant as the last line: an Agent Lightning runner given it as its
    store address (``LightningStoreClient(url)``) uses the tenant's store with no other credential."""
    from resonance_os.api.agl.store_urls import create_token, store_url, tenant_id_named

    database = _database(db)
    token = run_reporting_user_errors(lambda: create_token(database, tenant_id_named(database, name)))
    console.print(
        f"store URL of tenant {name} (shown once; revoke with `resonance tenants revoke-store-url`):"
    )
    print(store_url(base_url, token))


@tenants_app.command("revoke-store-url")
def revoke_store_url(
    name: str = typer.Argument(..., help="Tenant name."),
    prefix: str = typer.Argument(
        ..., help="The token's first characters (aglk_...), as shown when it was made."
    ),
    db: str = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Revoke a tenant's store URL; runners using it get 401."""
    from resonance_os.api.agl.store_urls import revoke_token, tenant_id_named

    database = _database(db)
    count = run_reporting_user_errors(lambda: revoke_token(database, tenant_id_named(database, name), prefix))
    console.print(f"revoked {count} store URL(s) of tenant {name}")


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``tenants`` to the ``resonance`` command."""
    app.command("serve")(serve)
    app.add_typer(tenants_app, name="tenants")
