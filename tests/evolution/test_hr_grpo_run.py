"""HR-GRPO run folders and the CLI around them: ``resonance train --method grpo`` and ``resonance generate
--policy`` with the trained adapter, on the tiny seeded Llama saved as a Hugging Face folder."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="the LM policy needs the local extra (transformers, peft)")
pytest.importorskip("peft", reason="the LM policy needs the local extra (transformers, peft)")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from tiny_lm import save_tiny_model  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from resonance_os.cli.hr_main import app  # noqa: E402
from resonance_os.core.errors import ValidationError  # noqa: E402
from resonance_os.evolution.base_models import base_model  # noqa: E402
from resonance_os.evolution.hr_grpo import hr_messages, train_hr_grpo  # noqa: E402
from resonance_os.evolution.hr_grpo_run import (  # noqa: E402
    is_hr_grpo_run,
    load_hr_grpo_run,
    policy_backend,
    save_hr_grpo_run,
)
from resonance_os.evolution.hr_policy import run_reward, write_with_policy  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.sft import SFT, SFTConfig  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.rl.logger import read_metrics  # noqa: E402
from resonance_os.rl.run import open_run  # noqa: E402

TOPICS = ["making bread at home", "the history of the bicycle"]
PARAGRAPH = "the big dog sat on the mat . then the red bird flew over the tree ."
FAST = {"max_new_tokens": 24, "learning_rate": 1e-3, "temperature": 1.5}


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny", context=512)


@pytest.fixture(scope="module")
def trained_run(tiny_folder, tmp_path_factory) -> tuple[Path, LMPolicy]:
    """The tiny model (LoRA) taught by an SFT warm-up to answer the writer's paragraph prompts with two
    plain sentences (its random init writes word salad the writer's cleaning drops), then one HR-GRPO
    step, saved as a run folder."""
    policy = LMPolicy(*base_model(str(tiny_folder)), PolicyConfig(lora_rank=4, lora_alpha=8))
    target = BUILTIN_TEMPLATES["creative"].vector.to_list()
    pairs = [(hr_messages(topic, target), PARAGRAPH) for topic in TOPICS + ["walking meetings"]]
    SFT(policy, pairs, SFTConfig(batch_size=3, learning_rate=1e-2, seed=0)).learn(40)
    trainer = train_hr_grpo(
        profile="builtin/creative", prompts=TOPICS, steps=1, policy=policy, config=FAST, seed=0
    )
    assert trainer.history[0]["reward_fluency"] > 0  # the drafts were real sentences, scored
    out = tmp_path_factory.mktemp("run") / "hr-grpo"
    save_hr_grpo_run(trainer, out, base=str(tiny_folder))
    return out, policy


def logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def test_run_folder_reloads_the_trained_adapter_and_drafts_with_it(trained_run, tiny_folder):
    out, trained = trained_run
    assert is_hr_grpo_run(out) and (out / "checkpoint" / "weights" / "adapter.safetensors").is_file()
    run = open_run(out)
    assert (run.kind, run.layout, run.checkpoint) == ("hr_grpo", "run", out / "checkpoint")
    settings = {
        **json.loads((out / "config.json").read_text()),
        **json.loads((out / "task.json").read_text()),
    }
    settings.pop("run_format"), settings.pop("kind")
    assert settings["method"] == "grpo" and settings["steps"] == 1 and settings["reward"] == "fast"
    assert settings["target_hrv"] == pytest.approx(BUILTIN_TEMPLATES["creative"].vector.to_list())
    policy, loaded = load_hr_grpo_run(out)
    assert loaded == settings
    ids = torch.tensor([[5, 9, 7, 12, 30, 31]])
    expected = logits(trained.base_model, ids)
    assert torch.allclose(logits(policy.base_model, ids), expected, atol=1e-5)
    _, base = base_model(str(tiny_folder))
    assert not torch.allclose(logits(base, ids), expected, atol=1e-2)
    # the writer's backend samples the reloaded policy (adapter on), as the trained one samples
    backend = policy_backend(policy, str(out))
    assert backend.name == f"local+grpo ({out})"
    chat = [{"role": "user", "content": "the cat sat"}]
    replies = backend.sample(chat, n=4, seed=3)
    assert replies == policy_backend(trained).sample(chat, n=4, seed=3)
    with policy.reference():  # the base model writes something else
        assert backend.sample(chat, n=4, seed=3) != replies


def test_cli_train_method_grpo_then_generate_with_the_policy(tiny_folder, trained_run, tmp_path):
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        ["train", "--method", "grpo", "--model", str(tiny_folder), "--profile", "builtin/creative",
         "--timesteps", "1", "--seed", "0", "--out", str(out), "--no-progress", "--early-stop-every", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "HR-GRPO" in result.output and "reward_resonance" in result.output
    assert "early stopping: ran to the end; kept the weights of step" in " ".join(result.output.split())
    assert f"--policy {out}" in " ".join(result.output.split())  # rich wraps long lines
    assert is_hr_grpo_run(out) and (out / "metrics.jsonl").is_file()
    assert open_run(out).config["base_model"] == str(tiny_folder)

    # a run whose model writes sentences (the warmed-up one) drafts the article
    run, _ = trained_run
    article = write_with_policy(run, "walking meetings", num_paragraphs=1, seed=0)
    assert article.backend == f"local+grpo ({run})" and article.target_source == "policy run target"
    assert "the big dog sat on the mat" in article.text
    result = runner.invoke(
        app, ["generate", "walking meetings", "--policy", str(run), "--paragraphs", "1", "--seed", "0",
              "--profile", "builtin/technical", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output[result.output.index("{") :])
    assert (
        printed["backend"] == f"local+grpo ({run})"
        and printed["target_source"] == "profile builtin/technical"
    )
    assert list(printed["target_hrv"].values()) == pytest.approx(
        BUILTIN_TEMPLATES["technical"].vector.to_list()
    )


def test_cli_train_method_grpo_bf16_samples_in_bf16_and_updates_in_mixed_precision(tiny_folder, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["train", "--method", "grpo", "--model", str(tiny_folder), "--profile", "builtin/creative",
         "--timesteps", "1", "--seed", "0", "--out", str(out), "--no-progress", "--bf16"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = read_metrics(out)
    assert 0 < row["rollout_kl"] < 0.05  # the bf16 copy sampled; the correction weighed the loss
    (metadata,) = [json.loads(path.read_text()) for path in out.rglob("metadata.json")]
    assert (
        metadata["grpo_config"]["rollout_dtype"] == metadata["grpo_config"]["mixed_precision"] == "bfloat16"
    )
    result = CliRunner().invoke(app, ["train", "--method", "ppo", "--bf16", "--out", str(tmp_path / "p")])
    assert result.exit_code != 0 and "--bf16 are for --method grpo" in result.output


def test_bad_runs_and_options_are_one_line_errors(trained_run, tmp_path):
    out, _ = trained_run
    runner = CliRunner()
    result = runner.invoke(
        app, ["generate", "walking meetings", "--policy", str(out), "--backend", "builtin"]
    )
    assert result.exit_code == 2 and "HR-GRPO run" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["train", "--method", "dqn", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "--method 'dqn' is not one of ppo, grpo" in result.output
    result = runner.invoke(app, ["train", "--method", "grpo", "--max-episode-steps", "2"])
    assert result.exit_code == 2 and "--max-episode-steps is for --method ppo" in result.output
    result = runner.invoke(app, ["train", "--device", "cuda"])
    assert result.exit_code == 2 and "--model and --device are for --method grpo" in result.output
    result = runner.invoke(app, ["train", "--early-stop-every", "4"])
    assert (
        result.exit_code == 2
        and "--early-stop-every, --max-drift and --bf16 are for --method grpo" in result.output
    )
    result = runner.invoke(app, ["train", "--method", "grpo", "--max-drift", "0.3"])
    assert result.exit_code == 2 and "--max-drift needs --early-stop-every N" in result.output
    result = runner.invoke(app, ["train", "--method", "grpo", "--early-stop-every", "2", "--max-drift", "0"])
    assert result.exit_code == 2 and "--max-drift 0.0 must be > 0" in result.output
    result = runner.invoke(app, ["train", "--method", "grpo", "--early-stop-every", "0"])
    assert result.exit_code == 2 and "--early-stop-every" in result.output
    result = runner.invoke(app, ["train", "--method", "grpo", "--model", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "neither 'smollm2' nor a local Hugging Face folder" in result.output
    with pytest.raises(ValidationError, match="not an HR-GRPO run"):
        load_hr_grpo_run(tmp_path)
    assert not is_hr_grpo_run(tmp_path)


def test_a_run_in_the_layout_before_the_run_seam_still_loads(trained_run, tmp_path):
    """An HR-GRPO run as ``save_hr_grpo_run`` wrote it before (``policy/`` + ``run.json``)."""
    out, _ = trained_run
    old = tmp_path / "old"
    shutil.copytree(out / "checkpoint", old / "policy")
    settings = {**open_run(out).config, **open_run(out).task}
    assert settings.pop("reward") == "fast"  # not recorded before
    (old / "run.json").write_text(json.dumps(settings, indent=2))
    run = open_run(old)
    assert (run.kind, run.layout, run.checkpoint, run.task["target_hrv"]) == (
        "hr_grpo",
        "hr_grpo_run",
        old / "policy",
        settings["target_hrv"],
    )
    assert is_hr_grpo_run(old)
    policy, loaded = load_hr_grpo_run(old)
    assert loaded == {**settings, "reward": "fast"} and run_reward(run) == "fast"
    ids = torch.tensor([[5, 9, 7, 12, 30, 31]])
    reloaded, _ = load_hr_grpo_run(out)
    assert torch.allclose(logits(policy.base_model, ids), logits(reloaded.base_model, ids), atol=1e-6)
