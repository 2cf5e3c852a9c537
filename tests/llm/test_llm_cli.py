"""``resonance llm train CONFIG.toml`` and the built-in rewards, on the tiny seeded Llama saved to a folder."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

from tiny_lm import save_tiny_model  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from resonance_os.cli.hr_main import app  # noqa: E402
from resonance_os.llm.rewards import build_reward, digits  # noqa: E402
from resonance_os.rl.errors import ConfigError  # noqa: E402
from resonance_os.rl.logger import read_metrics  # noqa: E402

runner = CliRunner()

GOOD = """
[model]
path = "tiny"
lora_rank = 4
lora_alpha = 8

[grpo]
group_size = 4
prompts_per_step = 2
max_new_tokens = 5
learning_rate = 5e-3
chat_template = false
seed = 0

[data]
prompts_file = "prompts.txt"

[reward]
digits_sorted = 1.0
contains = { weight = 0.5, text = "cat" }
exact_match = 0.1
"""


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    save_tiny_model(folder / "tiny")
    (folder / "prompts.txt").write_text(
        "three one two\tone two three\nnine four\tfour nine\n\nfive six\tfive six\n"
    )
    return folder


def write(folder, text, name="run.toml"):
    path = folder / name
    path.write_text(text)
    return path


def test_train_runs_logs_saves_and_prints_the_table(tiny_folder, tmp_path):
    config = write(tiny_folder, GOOD)
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["llm", "train", str(config), "--out", str(out), "--steps", "2", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "episode_reward_mean" in result.output and "reward_digits_sorted" in result.output
    rows = read_metrics(out)
    assert [r["timesteps"] for r in rows] == [1, 2]
    assert {"reward_digits_sorted", "reward_contains", "reward_exact_match"} <= set(rows[0])
    assert (out / "checkpoint" / "metadata.json").is_file() and (out / "config.toml").is_file()
    meta = json.loads((out / "checkpoint" / "metadata.json").read_text())
    assert meta["num_timesteps"] == 2 and meta["grpo_config"]["group_size"] == 4


def test_seed_flag_makes_runs_repeatable(tiny_folder, tmp_path):
    config = write(tiny_folder, GOOD.replace("seed = 0", ""), "noseed.toml")
    rows = []
    for i in range(2):
        out = tmp_path / f"r{i}"
        args = [
            "llm",
            "train",
            str(config),
            "--out",
            str(out),
            "--steps",
            "1",
            "--seed",
            "7",
            "--no-progress",
        ]
        assert runner.invoke(app, args).exit_code == 0
        rows.append(
            {
                k: v
                for k, v in read_metrics(out)[0].items()
                if not k.startswith("time") and "per_second" not in k
            }
        )
    assert rows[0] == rows[1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("group_size = 4", "group_size = 1"), "bad.toml: grpo.group_size=1: must be"),
        (("group_size = 4", "group_sise = 4"), "grpo.group_sise: unknown"),
        (("lora_rank = 4", "lora_rnk = 4"), "bad.toml: model:"),
        (('path = "tiny"', 'path = "nowhere"'), "model.path='nowhere'"),
        (('prompts_file = "prompts.txt"', 'prompts_file = "missing.txt"'), "data.prompts_file='missing.txt'"),
        (("digits_sorted = 1.0", "digit_sorted = 1.0"), "reward.digit_sorted: unknown reward"),
        (('text = "cat"', 'txt = "cat"'), "reward.contains: reward 'contains' got unknown options"),
        (("exact_match = 0.1", 'exact_match = "high"'), "reward.exact_match: weight='high'"),
        (("[grpo]", "[grpo"), "not valid TOML"),
        (("[data]", "[dat]"), "unknown table"),
    ],
)
def test_bad_config_is_one_line_naming_the_field_and_exit_2(tiny_folder, tmp_path, change, message):
    config = write(tiny_folder, GOOD.replace(*change), "bad.toml")
    result = runner.invoke(app, ["llm", "train", str(config), "--out", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output


def test_exact_match_without_answers_is_a_config_error(tiny_folder, tmp_path):
    text = GOOD.replace('prompts_file = "prompts.txt"', 'prompts = ["one two", "three"]')
    result = runner.invoke(
        app, ["llm", "train", str(write(tiny_folder, text, "noans.toml")), "--no-progress"]
    )
    assert result.exit_code == 2 and "reward.exact_match" in result.output and "answer" in result.output


def test_builtin_rewards():
    assert digits("3 one 2 nine") == [3, 1, 2, 9]
    sort = build_reward("digits_sorted")
    assert sort(["three 1 two", "5 4", "no digits"], ["1 two three", "5 4", ""]) == [1.0, 0.0, 0.0]
    assert build_reward("digits_sorted", descending=True)(["1 2"], ["2 1"]) == [1.0]
    answers = {"q": "the cat"}
    assert build_reward("exact_match", answers)(["q", "q"], [" the  cat ", "the dog"]) == [1.0, 0.0]
    assert build_reward("exact_match", answers, ignore_case=True)(["q"], ["The Cat"]) == [1.0]
    assert build_reward("contains", answers)(["q", "q"], ["so the cat sat", "dog"]) == [1.0, 0.0]
    chat = [{"role": "user", "content": "q"}]
    assert build_reward("contains", text="cat")([chat], ["a cat"]) == [1.0]
    with pytest.raises(ConfigError, match="unknown reward 'nope'"):
        build_reward("nope")
    with pytest.raises(ConfigError, match="needs an answer per prompt"):
        build_reward("exact_match")
    with pytest.raises(ConfigError, match="unknown options"):
        build_reward("contains", text="a", foo=1)
