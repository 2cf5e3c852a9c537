import json

import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.profiles import BUILTIN_TEMPLATES
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

runner = CliRunner()
HRV = "0.5,0.6,0.5,0.6,0.2,0.1,0.5,0.9"


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "store")


def invoke(*args, input=None):
    return runner.invoke(app, ["profiles", *args], input=input)


def test_create_show_list_history_delete(store):
    made = invoke("create", "acme", "blog", "--hrv", HRV, "-d", "Blog voice", "--store", store)
    assert made.exit_code == 0, made.output
    assert "acme/blog" in made.stdout and "emotional_valence" in made.stdout

    updated = invoke(
        "create", "acme", "blog", "--template", "creative", "--overwrite", "--store", store, "--json"
    )
    assert updated.exit_code == 0, updated.output
    data = json.loads(updated.stdout)
    assert data["version"] == 2
    assert list(data["hrv"].values()) == BUILTIN_TEMPLATES["creative"].vector.to_list()

    shown = json.loads(invoke("show", "acme", "blog", "--store", store, "--json").stdout)
    assert shown == data

    listed = json.loads(invoke("list", "acme", "--store", store, "--json").stdout)
    assert [p["name"] for p in listed] == ["blog"]
    assert json.loads(invoke("list", "--store", store, "--json").stdout) == {"acme": 1}
    table = invoke("list", "acme", "--store", store)
    assert "blog" in table.stdout and table.exit_code == 0

    history = json.loads(invoke("history", "acme", "blog", "--store", store, "--json").stdout)
    assert [v["version"] for v in history] == [1, 2]
    assert history[0]["description"] == "Blog voice"
    text_history = invoke("history", "acme", "blog", "--store", store)
    assert "created" in text_history.stdout and "storytelling_index" in text_history.stdout

    refused = invoke("delete", "acme", "blog", "--store", store, input="n\n")
    assert refused.exit_code == 1
    deleted = invoke("delete", "acme", "blog", "--store", store, input="y\n")
    assert deleted.exit_code == 0 and "deleted acme/blog" in deleted.stdout
    with HRVProfileManager(store) as manager:
        assert manager.list_profiles("acme") == []


def test_store_from_environment_and_url(tmp_path, monkeypatch):
    folder = tmp_path / "env-store"
    monkeypatch.setenv("RESONANCE_STORE", str(folder))
    assert invoke("create", "acme", "a", "--hrv", HRV).exit_code == 0
    url = f"sqlite:///{folder / 'resonance.db'}"
    monkeypatch.delenv("RESONANCE_STORE")
    out = invoke("show", "acme", "a", "--store", url, "--json")
    assert out.exit_code == 0 and json.loads(out.stdout)["name"] == "a"


@pytest.mark.parametrize(
    "args, message",
    [
        (["show", "acme", "missing"], "existing profiles: blog"),
        (["create", "acme", "../x", "--hrv", HRV], "invalid profile name '../x'"),
        (["create", "acme", "x", "--hrv", "0.5,zero"], "comma-separated"),
        (["create", "acme", "x", "--hrv", "0.5,0.5"], "must have 8 values"),
        (["create", "acme", "x", "--hrv", "0.5,0.5,0.5,0.5,0.5,0.5,0.5,1.5"], "active_voice_ratio"),
        (["create", "acme", "x"], "exactly one of --hrv or --template"),
        (["create", "acme", "x", "--template", "poetic"], "unknown template 'poetic'"),
        (["history", "globex", "blog"], "has no profiles yet"),
        (["delete", "acme", "missing", "-y"], "existing profiles: blog"),
        (["from-text", "acme", "x", "/no/such/file.txt"], "no such file"),
        (["list", "--store", "nosuch://x"], "cannot open database URL"),
    ],
)
def test_user_errors_print_one_red_line_and_exit_2(store, args, message):
    assert invoke("create", "acme", "blog", "--hrv", HRV, "--store", store).exit_code == 0
    if "--store" not in args:
        args = [*args, "--store", store]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.strip().startswith("error:")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_templates_command():
    result = invoke("templates", "--json")
    assert result.exit_code == 0
    assert set(json.loads(result.stdout)) == {"professional", "creative", "technical"}
    assert "default: professional" in invoke("templates").stdout


def test_help_everywhere():
    for command in ["list", "show", "create", "from-text", "delete", "history", "templates"]:
        result = invoke(command, "--help")
        assert result.exit_code == 0 and "Usage" in result.stdout


def _extractor_missing() -> str:
    try:
        from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: F401
    except ImportError as exc:  # built by another change; this test runs once it lands
        return f"resonance_os.profiling.hrv_extractor is not importable yet: {exc}"
    return ""


@pytest.mark.skipif(bool(_extractor_missing()), reason=_extractor_missing())
def test_from_text_file_and_stdin(store, tmp_path):
    sample = tmp_path / "sample.txt"
    sample.write_text("We met at dawn. The river was calm! Would the storm come back?", encoding="utf-8")
    from_file = invoke("from-text", "acme", "notes", str(sample), "--store", store, "--json")
    assert from_file.exit_code == 0, from_file.output
    from_stdin = invoke(
        "from-text", "acme", "notes", "-", "--overwrite", "--store", store, "--json", input=sample.read_text()
    )
    assert from_stdin.exit_code == 0, from_stdin.output
    first, second = json.loads(from_file.stdout), json.loads(from_stdin.stdout)
    assert first["hrv"] == second["hrv"] and second["version"] == 2
    empty = invoke("from-text", "acme", "notes", "-", "--overwrite", "--store", store, input="   \n")
    assert empty.exit_code == 2 and "error:" in empty.stderr
