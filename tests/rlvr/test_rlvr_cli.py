"""``resonance rlvr train CONFIG.toml`` end to end on the tiny seeded Llama and the real sandbox, and
the one-line errors of a bad config."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))

from tiny_lm import save_tiny_model  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from resonance_os.cli.hr_main import app  # noqa: E402
from resonance_os.rl.logger import read_metrics  # noqa: E402

runner = CliRunner()

GOOD = """
[model]
path = "tiny"
lora_rank = 4

[grpo]
loss_type = "gspo_plus"
group_size = 2
prompts_per_step = 2
max_new_tokens = 4
chat_template = false
overlong_filter = true
seed = 0

[rlvr]
source = "builtin"
heldout = 2
eval_samples = 2
eval_ks = [1, 2]
timeout = 5.0
memory_mb = 512
workers = 2
"""


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    save_tiny_model(folder / "tiny", context=512)
    return folder


def write(folder: Path, text: str, name: str = "run.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def train(config: Path, out: Path, *extra: str):
    return runner.invoke(app, ["rlvr", "train", str(config), "--out", str(out), "--no-progress", *extra])


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox starts as root (it drops each run to its own uid)")
def test_train_evaluates_before_and_after_and_saves_the_run(tiny_folder, tmp_path):
    out = tmp_path / "run"
    result = train(write(tiny_folder, GOOD), out, "--steps", "2")
    assert result.exit_code == 0, result.output
    assert "pass@1" in result.output and "pass@2" in result.output and "gspo_plus, 2 steps" in result.output
    report = json.loads((out / "report.json").read_text())
    assert report["loss_type"] == "gspo_plus" and report["steps"] == 2
    assert len(report["heldout_ids"]) == 2 and len(report["train_ids"]) == 6
    assert set(report["heldout_ids"]).isdisjoint(report["train_ids"])
    for when in ("before", "after"):  # 2 held-out problems x 2 samples, all judged by the sandbox
        assert report[when]["samples"] == 2 and len(report[when]["passes"]) == 2
        assert set(report[when]["pass_at"]) == {"1", "2"}
    # the tiny word-level model writes no Python: every rollout is a sandboxed failure, reward -1
    rows = read_metrics(out)
    assert [r["timesteps"] for r in rows] == [1, 2]
    assert all(r["reward_code"] == -1.0 and r["pass_rate"] == 0.0 for r in rows)
    meta = json.loads((out / "checkpoint" / "metadata.json").read_text())
    assert meta["grpo_config"]["loss_type"] == "gspo_plus" and meta["num_timesteps"] == 2
    assert (out / "config.toml").read_text() == GOOD


def without(text: str, line: str) -> str:
    assert line in text
    return text.replace(line + "\n", "")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            GOOD.replace('loss_type = "gspo_plus"', 'loss_type = "ppo"'),
            "run.toml: grpo.loss_type='ppo': must be one of",
        ),
        (GOOD.split("[grpo]")[0], "run.toml: missing table grpo"),
        (without(GOOD, 'path = "tiny"'), "run.toml: model.path must be"),
        (without(GOOD, "seed = 0"), "grpo.seed is missing"),
        (GOOD.replace("heldout = 2", "heldout = 8"), "heldout=8 leaves no problems"),
        (GOOD.replace("heldout = 2", "heldout = 1.5"), "run.toml: rlvr.heldout=1.5: must be a fraction"),
        (GOOD.replace("eval_ks = [1, 2]", "eval_ks = [3]"), "rlvr.eval_ks=[3]"),
        (GOOD.replace("workers = 2", "worker = 2"), "unknown rlvr settings ['worker']"),
        (
            GOOD.replace('source = "builtin"', 'source = "missing.jsonl"'),
            "rlvr.source='missing.jsonl': no such problem file",
        ),
        (GOOD + "[reward]\ncode = 1.0\n", "unknown table(s) ['reward']"),
    ],
)
def test_bad_config_is_one_line_and_writes_nothing(tiny_folder, tmp_path, config, message):
    out = tmp_path / "run"
    result = train(write(tiny_folder, config, "run.toml"), out)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_the_example_config_reads_as_the_benchmark_uses_it():
    from resonance_os.cli.rlvr import load_rlvr_spec

    example = Path(__file__).resolve().parents[2] / "examples" / "rlvr_easy_humaneval.toml"
    model_path, _, policy, grpo, rlvr = load_rlvr_spec(example)
    assert model_path == "smollm2" and policy.lora_rank == 16
    assert grpo.loss_type == "gspo_plus" and grpo.seed == 0 and grpo.overlong_filter
    assert rlvr.source == "humaneval" and rlvr.max_solution_lines == 1 and rlvr.heldout == 12


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox starts as root (it drops each run to its own uid)")
def test_max_policy_lag_trains_with_the_asynchronous_pipeline_on_local_processes(tiny_folder, tmp_path):
    out = tmp_path / "run"
    result = train(write(tiny_folder, GOOD), out, "--steps", "2", "--max-policy-lag", "1")
    assert result.exit_code == 0, result.output
    assert "AsyncGRPO, max_policy_lag 1, on local processes" in " ".join(result.output.split())
    report = json.loads((out / "report.json").read_text())
    assert report["pipeline"] == "AsyncGRPO, max_policy_lag 1, on local processes"
    assert [r["policy_lag"] for r in read_metrics(out)] == [0.0, 1.0]  # the second batch was in flight
    assert report["after"]["samples"] == 2 and (out / "checkpoint" / "metadata.json").is_file()


def test_ray_without_the_ray_extra_is_one_line_and_writes_nothing(tiny_folder, tmp_path):
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed here; tests/distributed/test_ray.py runs the pipeline on it")
    out = tmp_path / "run"
    result = train(write(tiny_folder, GOOD), out, "--ray", "local")
    assert result.exit_code == 2 and "pip install 'resonance-os[ray]'" in result.output
    assert "Traceback" not in result.output and not out.exists()
