"""The run seam (rl/run.py): one folder shape, create/open/resume/list, an atomic checkpoint, and the
trainer log folders written before it (DDPO, resonance llm/rlvr, API jobs) still opening."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from resonance_os.rl.algorithms.ppo import PPO
from resonance_os.rl.run import Run, RunError, is_run, list_runs, open_run

SMALL = {"n_steps": 32, "batch_size": 16, "n_epochs": 1, "seed": 0}


def cartpole_ppo(log_dir) -> PPO:
    model = PPO("MlpPolicy", gym.make("CartPole-v1"), log_dir=log_dir, **SMALL)
    return model.learn(64)


def test_a_run_is_created_trained_checkpointed_and_opened_by_one_loader(tmp_path):
    run = Run.create(tmp_path / "a", "cartpole", config={"ppo": SMALL}, task={"env": "CartPole-v1"})
    assert not run.has_checkpoint and run.metrics() == []
    model = cartpole_ppo(run.path)
    run.save_checkpoint(model.save)
    opened = open_run(tmp_path / "a")
    assert (opened.kind, opened.layout, opened.config, opened.task) == (
        "cartpole",
        "run",
        {"ppo": SMALL},
        {"env": "CartPole-v1"},
    )
    assert opened.has_checkpoint and opened.metrics() == model.history
    assert sorted(p.name for p in run.path.iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "task.json",
    ]
    resumed = PPO.load(Run.resume(tmp_path / "a", "cartpole").checkpoint, env=gym.make("CartPole-v1"))
    assert resumed.num_timesteps == model.num_timesteps
    obs = np.zeros(4, dtype=np.float32)
    assert resumed.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]


def test_creating_over_a_run_resuming_nothing_and_the_wrong_kind_are_clear_errors(tmp_path):
    Run.create(tmp_path / "a", "cartpole")
    with pytest.raises(RunError, match="already holds a cartpole run; pass a new folder or resume it"):
        Run.create(tmp_path / "a", "cartpole")
    assert Run.create(tmp_path / "a", "cartpole", exist_ok=True).kind == "cartpole"
    with pytest.raises(RunError, match="holds a cartpole run, not ddpo"):
        Run.create(tmp_path / "a", "ddpo", exist_ok=True)
    assert Run.create(tmp_path / "a", "ddpo", task={"reward": "x"}, overwrite=True).task == {"reward": "x"}
    with pytest.raises(RunError, match="no checkpoint/ to resume from"):
        Run.resume(tmp_path / "a")
    with pytest.raises(RunError, match="not a training run"):
        open_run(tmp_path)
    with pytest.raises(RunError, match="no such folder"):
        open_run(tmp_path / "nowhere")
    (tmp_path / "a" / "config.json").write_text('{"run_format": 9, "kind": "ddpo"}')
    with pytest.raises(RunError, match="run format 9.*upgrade resonance-os"):
        open_run(tmp_path / "a")
    (tmp_path / "a" / "task.json").write_text("[1, 2")
    (tmp_path / "a" / "config.json").write_text('{"run_format": 1, "kind": "ddpo"}')
    with pytest.raises(RunError, match="task.json is unreadable"):
        open_run(tmp_path / "a")


def test_a_failed_save_leaves_the_previous_checkpoint_whole(tmp_path):
    run = Run.create(tmp_path / "a", "cartpole")
    model = cartpole_ppo(run.path)
    run.save_checkpoint(model.save)
    before = {p.relative_to(run.path): p.read_bytes() for p in run.checkpoint.rglob("*") if p.is_file()}

    def crash(folder):
        (folder / "weights").mkdir(parents=True)
        (folder / "weights" / "policy.safetensors").write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run.save_checkpoint(crash)
    after = {p.relative_to(run.path): p.read_bytes() for p in run.checkpoint.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in run.path.iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "task.json",
    ]


def test_trainer_log_folders_and_api_job_folders_written_before_the_seam_open(tmp_path):
    # resonance ddpo / llm / rlvr: log_dir with metrics.jsonl and the trainer's save in checkpoint/
    model = cartpole_ppo(tmp_path / "log")
    model.save(tmp_path / "log" / "checkpoint")
    run = open_run(tmp_path / "log")
    assert (run.kind, run.layout, run.checkpoint) == ("ppo", "checkpoint", tmp_path / "log" / "checkpoint")
    assert run.config == json.loads((tmp_path / "log" / "checkpoint" / "config.json").read_text())
    assert run.metrics() == model.history
    # an API training job's work folder: checkpoint/ and metrics in logs/
    job = cartpole_ppo(tmp_path / "job" / "logs")
    job.save(tmp_path / "job" / "checkpoint")
    run = Run.resume(tmp_path / "job", "ppo")
    assert run.layout == "job" and run.metrics() == job.history
    assert PPO.load(run.checkpoint, env=gym.make("CartPole-v1")).num_timesteps == 64


def test_list_runs_finds_every_layout_and_skips_other_folders(tmp_path):
    Run.create(tmp_path / "b", "cartpole")
    (tmp_path / "a" / "model").mkdir(parents=True)
    (tmp_path / "a" / "env.json").write_text("{}")
    (tmp_path / "c" / "policy").mkdir(parents=True)
    (tmp_path / "c" / "run.json").write_text(json.dumps({"method": "grpo", "target_hrv": [0.5] * 8}))
    (tmp_path / "notes").mkdir()
    (tmp_path / "file.txt").write_text("x")
    runs = list_runs(tmp_path)
    assert [(r.path.name, r.kind, r.layout) for r in runs] == [
        ("a", "hr_ppo", "hr_policy"),
        ("b", "cartpole", "run"),
        ("c", "hr_grpo", "hr_grpo_run"),
    ]
    assert runs[2].task == {"target_hrv": [0.5] * 8} and runs[2].config == {"method": "grpo"}
    assert not is_run(tmp_path / "notes") and list_runs(tmp_path / "nowhere") == []
