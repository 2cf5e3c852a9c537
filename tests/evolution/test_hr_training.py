import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.core.errors import ValidationError
from resonance_os.evolution.hr_policy import (
    load_run,
    run_observation,
    run_reward,
    save_run,
    write_with_policy,
)
from resonance_os.evolution.hr_rl_trainer import (
    HRWritingEnv,
    hr_ppo_config,
    train_hr_ppo,
)
from resonance_os.generation.human_resonant_writer import DRAFT_MODE
from resonance_os.rl.algorithms.ppo import PPO, PPOConfig
from resonance_os.rl.logger import read_metrics
from resonance_os.rl.run import Run, open_run

SMALL = {"n_steps": 64, "batch_size": 32, "n_epochs": 2}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    env = HRWritingEnv()
    out = tmp_path_factory.mktemp("run")
    model = train_hr_ppo(env, timesteps=128, config=SMALL, seed=0, log_dir=out, progress_bar=False)
    save_run(model, env, out)
    return out


def test_spec_configuration_and_network_are_the_defaults():
    settings = hr_ppo_config()
    config = PPOConfig.from_dict(settings)
    assert (config.learning_rate, config.batch_size, config.n_steps, config.gamma, config.gae_lambda) == (
        3e-4,
        64,
        2048,
        0.99,
        0.95,
    )
    assert (config.clip_range, config.ent_coef, config.vf_coef, config.max_grad_norm) == (0.2, 0.01, 0.5, 0.5)
    assert settings["policy_kwargs"]["net_arch"] == [64, 128, 64]
    assert settings["policy_kwargs"]["squash_output"] is True
    assert hr_ppo_config({"n_steps": 128}, seed=3)["n_steps"] == 128


def test_training_logs_the_spec_metrics_and_the_run_reloads(run_dir):
    rows = read_metrics(run_dir)
    for name in (
        "episode_reward_mean",
        "loss",
        "policy_loss",
        "value_loss",
        "entropy_loss",
        "explained_variance",
    ):
        assert name in rows[-1]
    model, env = load_run(run_dir)
    assert env.observation == "gap" and model.observation_space.shape == (8,)
    run = open_run(run_dir)  # the one run shape: config.json, task.json, checkpoint/, metrics.jsonl
    assert (run.kind, run.layout, run.config["algorithm"], run.config["reward"]) == (
        "hr_ppo",
        "run",
        "PPO",
        "fast",
    )
    assert run.config["ppo"] == json.loads(model.config.to_json()) and run.config["ppo"]["n_steps"] == 64
    assert run.task == env.settings() and run.task["reward"] == "fast" and run.metrics() == rows
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "checkpoint",
        "config.json",
        "metrics.jsonl",
        "task.json",
    ]
    obs, _ = env.reset(seed=0)
    action, _ = model.predict(obs)
    assert action.shape == (8,) and np.all(np.abs(action) <= 1.0)


def test_policy_revises_the_writers_drafts(run_dir):
    article = write_with_policy(run_dir, "community gardens", num_paragraphs=2, seed=1)
    assert len(article.paragraphs) == 2
    assert article.backend == f"{DRAFT_MODE}+policy"
    assert 0.0 <= article.resonance <= 1.0
    assert all("garden" in p.lower() for p in article.paragraphs)
    assert [step["layer"] for step in article.trace] == [
        "planner",
        "sentence",
        "policy",
        "aim",
        "sentence",
        "policy",
    ]
    _, env = load_run(run_dir)
    revisions = [step for step in article.trace if step["layer"] == "policy"]
    for step in revisions:
        assert len(step["revision_scores"]) == env.max_episode_steps + 1
        assert max(step["revision_scores"]) >= step["revision_scores"][0]


def test_the_writers_between_paragraphs_hook_runs_with_a_policy(run_dir):
    calls = []
    article = write_with_policy(
        run_dir, "community gardens", num_paragraphs=3, seed=1, between_paragraphs=lambda: calls.append(1)
    )
    assert len(calls) == 2  # before paragraphs 2 and 3, as in HumanResonantWriter.generate
    assert article == write_with_policy(run_dir, "community gardens", num_paragraphs=3, seed=1)

    class Stop(Exception):
        pass

    def stop():
        raise Stop

    with pytest.raises(Stop):  # a service stops the writing here (a client that left, a time budget)
        write_with_policy(run_dir, "community gardens", num_paragraphs=3, seed=1, between_paragraphs=stop)


def test_a_run_in_the_old_layout_trained_on_the_full_observation_still_loads(tmp_path):
    """A run as ``save_run`` wrote it before the run seam (``model/`` + ``env.json``), from before the
    observation was recorded (it saw the 17 floats)."""
    env = HRWritingEnv(observation="full")
    model = train_hr_ppo(env, timesteps=64, config=SMALL, seed=0, log_dir=tmp_path, progress_bar=False)
    model.save(tmp_path / "model")
    settings = env.settings()
    assert settings.pop("observation") == "full" and settings.pop("reward") == "fast"
    (tmp_path / "env.json").write_text(json.dumps(settings, indent=2))
    run = open_run(tmp_path)
    assert (run.kind, run.layout, run.checkpoint) == ("hr_ppo", "hr_policy", tmp_path / "model")
    assert run.metrics() == model.history
    loaded, loaded_env = load_run(tmp_path)
    obs, _ = loaded_env.reset(seed=0)
    assert obs.shape == (17,) and run_reward(run) == loaded_env.writer.reward.kind == "fast"
    np.testing.assert_allclose(
        loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0]
    )
    assert len(write_with_policy(tmp_path, "community gardens", num_paragraphs=1, seed=1).paragraphs) == 1


def test_generate_cli_uses_a_trained_policy(run_dir):
    result = CliRunner().invoke(
        app, ["generate", "community gardens", "--policy", str(run_dir), "--paragraphs", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "+policy" in result.output


def test_bad_runs_and_arguments_are_clear_errors(tmp_path, run_dir):
    with pytest.raises(ValidationError, match="not a training run"):
        load_run(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    settings = json.loads((old / "task.json").read_text())
    (old / "task.json").write_text(json.dumps({**settings, "calibration_seed": 0}))
    with pytest.raises(ValidationError, match="older HRWritingEnv"):
        load_run(old)
    with pytest.raises(ValidationError, match="timesteps"):
        train_hr_ppo(HRWritingEnv(), timesteps=0)
    result = CliRunner().invoke(app, ["train", "--profile", "builtin/creative", "--hrv", "0.5,0.5"])
    assert result.exit_code == 2
    assert "not both" in result.output


def test_saving_into_a_run_its_trainer_began_keeps_the_runs_settings(tmp_path):
    """An API job's run: begun with its PPO settings (and whatever else the trainer recorded), trained,
    then saved by save_run, which must not write its config over with {"algorithm": "PPO"}."""
    env = HRWritingEnv()
    began = {"algorithm": "PPO", "ppo": hr_ppo_config(SMALL, seed=0), "job": "j-1"}
    run = Run.create(tmp_path, "hr_ppo", config=began, task=env.settings())
    model = train_hr_ppo(env, timesteps=64, config=SMALL, seed=0, log_dir=tmp_path, progress_bar=False)
    save_run(model, env, run.path)
    saved = open_run(run.path)
    assert saved.config["job"] == "j-1" and saved.config["reward"] == "fast"
    assert saved.config["ppo"] == json.loads(model.config.to_json())
    assert {k: saved.config["ppo"][k] for k in SMALL} == SMALL and saved.config["ppo"]["seed"] == 0
    assert len(saved.metrics()) == 1  # the log the trainer wrote is kept


def test_a_run_recorded_without_an_observation_reads_it_from_its_checkpoint(tmp_path):
    for observation, size in (("gap", 8), ("full", 17)):
        env = HRWritingEnv(observation=observation)
        folder = tmp_path / observation
        save_run(PPO("MlpPolicy", env, **SMALL), env, folder)
        task = json.loads((folder / "task.json").read_text())
        del task["observation"], task["reward"]
        (folder / "task.json").write_text(json.dumps(task))
        run = open_run(folder)
        assert run.checkpoint_metadata()["observation_space"]["shape"] == [size]
        assert (run_observation(run), run_reward(run)) == (observation, "fast")
        assert load_run(folder)[1].observation_space.shape == (size,)


def test_train_and_generate_cli_refuse_an_unknown_reward_before_any_work(tmp_path, run_dir):
    result = CliRunner().invoke(app, ["train", "--reward", "gpt", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "reward must be one of fast, lm" in result.output and not (tmp_path / "r").exists()
    for extra in ([], ["--policy", str(run_dir)]):
        result = CliRunner().invoke(
            app, ["generate", "gardens", "--backend", "builtin", "--reward", "gpt", *extra]
        )
        assert result.exit_code == 2 and "reward must be one of fast, lm" in result.output


@pytest.mark.slow
def test_the_lm_reward_is_chosen_once_and_a_run_reopens_with_it(tmp_path):
    """reward="lm" reaches the env's writer, is recorded, and load_run re-opens the env with it."""
    env = HRWritingEnv(reward="lm")
    assert env.writer.reward.kind == "lm"
    save_run(PPO("MlpPolicy", env, **SMALL), env, tmp_path)
    run = open_run(tmp_path)
    assert run.config["reward"] == run.task["reward"] == run_reward(run) == "lm"
    _, loaded = load_run(tmp_path)
    assert loaded.writer.reward.kind == "lm" and loaded.reset(seed=0)[1]["fluency"] > 0
