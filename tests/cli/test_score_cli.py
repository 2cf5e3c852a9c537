"""``resonance score FILE``: the writing reward from the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.damage import word_salad
from resonance_os.quality.reward import WritingReward

runner = CliRunner()
TEXT = (
    "The ferry left before dawn, loaded with bicycles and crates of bread. By the time the fog lifted, "
    "the island was already in sight. The captain slowed the engine and let the gulls pass, and the "
    "passengers went up on deck to watch the harbour come closer."
)


def test_json_has_the_documented_keys_and_matches_the_reward(tmp_path) -> None:
    path = tmp_path / "draft.txt"
    path.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(
        app, ["score", str(path), "--profile", "builtin/creative", "--prompt", "a ferry crossing", "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"hrv", "resonance", "fluency", "coherence", "topic", "repetition", "reward"} <= set(payload)
    assert list(payload["hrv"]) == HRV_DIMENSIONS
    expected = WritingReward().score(
        TEXT, BUILTIN_TEMPLATES["creative"].vector.to_list(), prompt="a ferry crossing"
    )
    assert payload["reward"] == expected.reward and payload["topic"] == expected.topic


def test_table_and_stdin(tmp_path) -> None:
    good = runner.invoke(app, ["score", "-"], input=TEXT)
    salad = runner.invoke(app, ["score", "-"], input=word_salad(TEXT, seed=2))
    assert good.exit_code == 0 and "reward" in good.stdout and "fluency" in good.stdout
    assert "builtin/professional" in good.stdout  # the default target is named
    assert float(good.stdout.split("reward ")[1].split()[0]) > float(
        salad.stdout.split("reward ")[1].split()[0]
    )


def test_user_errors_are_one_line(tmp_path) -> None:
    for args, fragment in [
        (["score", str(tmp_path / "missing.txt")], "no such file"),
        (["score", "-", "--profile", "builtin/nope"], "no built-in profile"),
        (["score", "-", "--profile", "builtin/creative", "--hrv", "0.5"], "not both"),
        (["score", "-", "--reward", "gpt"], "reward must be one of fast, lm"),
        (["score", "-", "--model", "gpt"], "reward must be one of fast, lm"),  # --reward's older name
    ]:
        result = runner.invoke(app, args, input=TEXT)
        assert result.exit_code == 2, result.output
        assert fragment in result.output


def test_the_reward_is_chosen_with_reward_as_in_every_command() -> None:
    """``--reward fast`` (and its older name ``--model``) is the default's score."""
    default = runner.invoke(app, ["score", "-", "--json"], input=TEXT)
    for option in ("--reward", "--model"):
        chosen = runner.invoke(app, ["score", "-", "--json", option, "fast"], input=TEXT)
        assert chosen.exit_code == 0, chosen.output
        assert json.loads(chosen.stdout) == json.loads(default.stdout)
