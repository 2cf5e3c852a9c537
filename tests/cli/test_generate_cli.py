import json

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app

runner = CliRunner()


def test_generate_prints_article_and_target_vs_measured_table():
    result = runner.invoke(
        app, ["generate", "remote work", "--paragraphs", "2", "--seed", "3", "--backend", "builtin"]
    )
    assert result.exit_code == 0, result.output
    assert "remote work" in result.stdout.lower()
    for header in ("dimension", "target", "measured", "storytelling_index", "writing reward", "fluency"):
        assert header in result.stdout
    assert "template draft mode" in result.stdout  # the template composer says what it is


def test_generate_json_with_hrv_and_profile():
    hrv = "0.5,0.6,0.5,0.6,0.2,0.1,0.5,0.9"
    result = runner.invoke(
        app,
        [
            "generate",
            "tea",
            "--hrv",
            hrv,
            "--paragraphs",
            "1",
            "--seed",
            "1",
            "--json",
            "--backend",
            "builtin",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data["target_hrv"].values()) == [0.5, 0.6, 0.5, 0.6, 0.2, 0.1, 0.5, 0.9]
    assert len(data["paragraphs"]) == 1 and data["backend"] == "builtin (template draft mode)"
    assert set(data["quality"]) == {"fluency", "coherence", "topic", "repetition"}
    assert 0.0 < data["reward"] <= 1.0
    creative = runner.invoke(app, ["generate", "tea", "--profile", "builtin/creative", "--json"])
    assert json.loads(creative.stdout)["target_source"] == "profile builtin/creative"


def test_generate_resolves_a_stored_profile_at_the_edge(tmp_path):
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

    acme = [0.55, 0.3, 0.5, 0.3, 0.3, 0.2, 0.6, 0.8]
    with HRVProfileManager(tmp_path / "store") as manager:
        manager.save_profile("acme", "newsletter", acme)
    args = ["generate", "tea", "--paragraphs", "1", "--seed", "1", "--json", "--backend", "builtin"]
    result = runner.invoke(app, [*args, "--profile", "acme/newsletter", "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["target_source"] == "profile acme/newsletter"
    assert list(data["target_hrv"].values()) == acme
    unknown = runner.invoke(app, [*args, "--profile", "acme/blog", "--store", str(tmp_path / "store")])
    assert unknown.exit_code == 2 and "newsletter" in unknown.output, unknown.output


def test_user_errors_exit_2_with_one_line():
    for args, message in (
        (["generate", " "], "prompt is empty"),
        (["generate", "tea", "--hrv", "0.5,abc"], "comma-separated"),
        (["generate", "tea", "--hrv", "0.5,0.5"], "8 values"),
        (["generate", "tea", "--profile", "builtin/none"], "built-in profiles"),
        (["generate", "tea", "--profile", "builtin/creative", "--hrv", "0.5,0.5"], "not both"),
        (["generate", "tea", "--backend", "gpt"], "unknown backend"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
