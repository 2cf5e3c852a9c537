"""``resonance refine``: a sentence diff, the JSON payload, --out, and one-line user errors."""

import json

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app

TEXT = (
    "The interpreter imports the module. The result is an integer. "
    "The call returns a new list of the items in their original order.\n"
)
runner = CliRunner()


def test_prints_a_sentence_diff_and_the_table(tmp_path):
    source = tmp_path / "draft.txt"
    source.write_text(TEXT)
    result = runner.invoke(app, ["refine", str(source), "--profile", "builtin/creative"])
    assert result.exit_code == 0, result.output
    assert "--- before" in result.output and "+++ after" in result.output
    assert "storytelling_index" in result.output and "reward" in result.output


def test_json_and_out(tmp_path):
    source, out = tmp_path / "draft.txt", tmp_path / "edited.txt"
    source.write_text(TEXT)
    result = runner.invoke(
        app, ["refine", str(source), "--profile", "builtin/creative", "--json", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert set(payload) == {
        "text",
        "edits",
        "suggestions",
        "hrv_before",
        "hrv_after",
        "reward_before",
        "reward_after",
    }
    assert [s["edit"] for s in payload["suggestions"]] == payload["edits"]
    assert payload["edits"] and payload["text"] != TEXT.strip()
    assert out.read_text() == payload["text"] + "\n"


def test_user_errors_are_one_line_exit_2(tmp_path):
    missing = runner.invoke(app, ["refine", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 2 and "no such file" in missing.output
    source = tmp_path / "draft.txt"
    source.write_text(TEXT)
    both = runner.invoke(app, ["refine", str(source), "--profile", "builtin/creative", "--hrv", "0.5"])
    assert both.exit_code == 2 and "not both" in both.output
    bad = runner.invoke(app, ["refine", str(source), "--profile", "builtin/nope"])
    assert bad.exit_code == 2 and "nope" in bad.output
