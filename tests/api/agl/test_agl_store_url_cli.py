"""`resonance tenants store-url NAME` prints a store URL (last line) that serves the tenant's store with
no other credential; `revoke-store-url NAME PREFIX` stops it; unknown tenants exit 2."""

from __future__ import annotations

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.cli.hr_main import app as cli

runner = CliRunner()


def test_store_url_from_the_command_line(db_url):
    app = create_app(db_url, auth_cache_s=0)
    create_tenant(app.state.service.db, "cli-agl")
    made = runner.invoke(
        cli, ["tenants", "store-url", "cli-agl", "--base-url", "http://testserver/", "--db", db_url]
    )
    assert made.exit_code == 0, made.output
    url = made.output.strip().splitlines()[-1]
    assert url.startswith("http://testserver/agl-key/aglk_")
    path = url.removeprefix("http://testserver")
    with TestClient(app) as client:
        assert (
            client.post(
                f"{path}/v1/agl/queues/rollouts/enqueue", json={"rollouts": [{"input": 1}]}
            ).status_code
            == 201
        )
        prefix = path.split("/")[-1][:12]
        revoked = runner.invoke(cli, ["tenants", "revoke-store-url", "cli-agl", prefix, "--db", db_url])
        assert revoked.exit_code == 0 and "revoked 1" in revoked.output
        assert client.get(f"{path}/v1/agl/health").status_code == 401
    missing = runner.invoke(cli, ["tenants", "store-url", "nobody", "--db", db_url])
    assert missing.exit_code == 2 and "no tenant named 'nobody'" in missing.output
