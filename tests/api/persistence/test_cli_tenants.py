"""`resonance tenants ...`: the key printed as the last line works against the app; errors exit 2."""

from __future__ import annotations

from fastapi.testclient import TestClient
from service_helpers import unique
from typer.testing import CliRunner

from resonance_os.api.hr_server import create_app
from resonance_os.cli.hr_main import app as cli

runner = CliRunner()


def test_create_list_rotate_and_revoke_from_the_command_line(db_url):
    name = unique("cli")
    created = runner.invoke(cli, ["tenants", "create", name, "--db", db_url])
    assert created.exit_code == 0, created.output
    key = created.output.strip().splitlines()[-1]
    assert key.startswith("rsk_")
    app = create_app(db_url, auth_cache_s=0)  # no cache: see the revocation at once (cache: test_auth)
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {key}"}
        assert client.get("/v1/profiles", headers=headers).status_code == 200

        listed = runner.invoke(cli, ["tenants", "list", "--db", db_url])
        assert name in listed.output and key[:12] in listed.output and key not in listed.output

        rotated = runner.invoke(cli, ["tenants", "rotate-key", name, "--db", db_url])
        new_key = rotated.output.strip().splitlines()[-1]
        assert client.get("/v1/profiles", headers=headers).status_code == 401
        new_headers = {"Authorization": f"Bearer {new_key}"}
        assert client.get("/v1/profiles", headers=new_headers).status_code == 200

        revoked = runner.invoke(
            cli, ["tenants", "revoke-key", name, "--prefix", new_key[:12], "--db", db_url]
        )
        assert revoked.exit_code == 0 and "revoked 1" in revoked.output
        assert client.get("/v1/profiles", headers=new_headers).status_code == 401


def test_user_errors_exit_2_with_one_line(db_url):
    name = unique("dup")
    assert runner.invoke(cli, ["tenants", "create", name, "--db", db_url]).exit_code == 0
    for args in (
        ["tenants", "create", name],
        ["tenants", "create", "../etc"],
        ["tenants", "rotate-key", "ghost-x"],
    ):
        result = runner.invoke(cli, [*args, "--db", db_url])
        assert result.exit_code == 2, (args, result.output)
