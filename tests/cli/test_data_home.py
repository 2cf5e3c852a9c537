"""One data home, one database: `resonance serve` and the profile commands share
``$RESONANCE_HOME/resonance.db`` by default; an old ``profiles.db`` beside it is merged in on first use
with no profile lost; ``--store x.db`` names a file, never a folder."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.db import resolve_db_url
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.cli.hr_main import app as cli
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

runner = CliRunner()
HRV = [0.4, 0.6, 0.35, 0.65, 0.2, 0.05, 0.3, 0.9]
OTHER = [0.5] * 8
SAMPLE = "The harbour woke at dawn. Boats slid out past the breakwater! Who would buy the catch today?"


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("RESONANCE_HOME", str(home))
    for name in ("RESONANCE_DB", "RESONANCE_STORE", "HRV_TENANT_DIR", "RESONANCE_KEY_PEPPER"):
        monkeypatch.delenv(name, raising=False)
    return home


def profiles(*args: str):
    return runner.invoke(cli, ["profiles", *args])


def test_a_profile_made_in_the_service_is_the_cli_target_by_default(home, tmp_path):
    server = create_app(None, text_workers=0, rate_limit_per_s=1000.0, rate_limit_burst=1000.0)
    assert server.state.service.db.url == f"sqlite:///{(home / 'resonance.db').resolve()}"
    key = create_tenant(server.state.service.db, "studio-team")
    with TestClient(server) as client:
        made = client.post(
            "/v1/profiles/from-text",
            json={"name": "newsletter", "text": SAMPLE},
            headers={"Authorization": f"Bearer {key}"},
        )
    assert made.status_code == 201, made.text
    shown = profiles("show", "studio-team", "newsletter", "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["hrv"] == made.json()["hrv"]
    text = tmp_path / "draft.txt"
    text.write_text(SAMPLE, encoding="utf-8")
    scored = runner.invoke(cli, ["score", str(text), "--profile", "studio-team/newsletter", "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["resonance"] > 0.99  # the text the profile was measured from


def test_moving_the_home_moves_the_database(home, tmp_path, monkeypatch):
    assert profiles("create", "acme", "blog", "--hrv", ",".join(map(str, HRV))).exit_code == 0
    assert (home / "resonance.db").is_file() and not (home / "profiles.db").exists()
    monkeypatch.setenv("RESONANCE_HOME", str(tmp_path / "fresh"))
    assert resolve_db_url(None) == f"sqlite:///{(tmp_path / 'fresh' / 'resonance.db').resolve()}"
    assert "no profiles stored yet" in profiles("list").stdout
    moved = home.rename(tmp_path / "moved")  # move the folder, point RESONANCE_HOME at it
    monkeypatch.setenv("RESONANCE_HOME", str(moved))
    assert json.loads(profiles("list", "--json").stdout) == {"acme": 1}


def _legacy_store(folder: Path) -> None:
    """A data home as 0.1 left it: the profile commands' own profiles.db."""
    folder.mkdir(parents=True, exist_ok=True)
    with HRVProfileManager(folder / "profiles.db") as old:
        old.save_profile("acme", "blog", HRV, "cli v1")
        old.save_profile("acme", "blog", OTHER, "cli v2")
        old.save_profile("acme", "same", HRV)
        old.save_profile("solo", "notes", OTHER)


def test_an_old_profiles_db_is_merged_once_with_nothing_lost(home, caplog):
    home.mkdir()
    with HRVProfileManager(home / "resonance.db") as served:  # what the service made meanwhile
        served.save_profile("acme", "blog", OTHER, "studio v1")
        served.save_profile("acme", "same", HRV)
    _legacy_store(home)

    listed = profiles("list", "--json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == {"acme": 3, "solo": 1}
    assert "acme/blog as acme/blog.profiles-db" in caplog.text and "profiles.db.merged" in caplog.text
    caplog.clear()
    assert not (home / "profiles.db").exists() and (home / "profiles.db.merged").is_file()

    def show(tenant: str, name: str) -> dict:
        return json.loads(profiles("show", tenant, name, "--json").stdout)

    assert show("acme", "blog")["description"] == "studio v1"  # the shared database's copy stays current
    renamed = json.loads(profiles("history", "acme", "blog.profiles-db", "--json").stdout)
    assert [(v["version"], v["description"]) for v in renamed] == [(1, "cli v1"), (2, "cli v2")]
    assert show("acme", "same")["version"] == 1  # the same history in both: kept once
    assert show("solo", "notes")["hrv"] == dict(zip(show("solo", "notes")["hrv"], OTHER))

    again = profiles("list", "--json")  # merged once: nothing copied twice, no second notice
    assert json.loads(again.stdout) == {"acme": 3, "solo": 1} and "merged" not in caplog.text
    rows = sqlite3.connect(home / "profiles.db.merged").execute("SELECT count(*) FROM profiles").fetchone()
    assert rows == (3,)  # the old file is kept as it was


def test_concurrent_first_opens_merge_exactly_once(home):
    _legacy_store(home)
    script = "from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager as M; M().close()"
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True) for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    assert sum("merged" in e for e in errors) == 1
    assert json.loads(profiles("list", "--json").stdout) == {"acme": 2, "solo": 1}


def test_store_naming_a_db_file_opens_that_file(home, tmp_path):
    target = tmp_path / "team.db"
    made = profiles("create", "acme", "blog", "--hrv", ",".join(map(str, HRV)), "--store", str(target))
    assert made.exit_code == 0, made.output
    assert target.is_file() and not (tmp_path / "team.db" / "resonance.db").exists()
    missing = profiles("list", "--store", str(tmp_path / "no-such-folder" / "team.db"))
    assert missing.exit_code == 2
    assert "does not exist; create it first" in missing.stderr
    assert not (tmp_path / "no-such-folder").exists()
