"""PPO, SAC, GP control and GRPO share one surface (resonance_os.rl.contract): callbacks, history,
checkpoint keys, progress_bar default, seeding that leaves torch's global RNG alone; checkpoints of
older builds still load; SAC's direct fused-Adam call falls back to the public step."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch

import resonance_os.rl.envs  # noqa: F401  (registers resonance_os/MGM-v0)
from resonance_os.rl.algorithms import sac as sac_module
from resonance_os.rl.algorithms.gp_control import GPController
from resonance_os.rl.algorithms.ppo import PPO
from resonance_os.rl.algorithms.sac import SAC
from resonance_os.rl.contract import CHECKPOINT_KEYS, RLAlgorithm, seeded_torch
from resonance_os.rl.errors import EnvMismatchError

SMALL_SAC = {"net_arch": [16, 16], "learning_starts": 20, "batch_size": 16, "log_interval": 1}


def make_ppo(seed: int = 0) -> PPO:
    return PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, seed=seed,
               policy_kwargs={"net_arch": [8]})  # fmt: skip


def make_sac(seed: int = 0) -> SAC:
    return SAC("MlpPolicy", gymnasium.make("Pendulum-v1", max_episode_steps=50), seed=seed, **SMALL_SAC)


def make_gp(seed: int = 0) -> GPController:
    return GPController("LinearFeedback", gymnasium.make("resonance_os/MGM-v0"), seed=seed, n_initial=4,
                        n_eval_starts=1, horizon=20, n_candidates=50)  # fmt: skip


def make_grpo(seed: int = 0) -> Any:
    pytest.importorskip("transformers", reason="GRPO needs the local extra (transformers, peft)")
    pytest.importorskip("peft", reason="GRPO needs the local extra (transformers, peft)")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
    from tiny_lm import make_model, make_tokenizer

    from resonance_os.llm.grpo import GRPO, GRPOConfig
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    tok = make_tokenizer()
    with torch.random.fork_rng(devices=[]):  # the tiny test model seeds torch globally; the trainer must not
        policy = LMPolicy(tok, make_model(len(tok)), PolicyConfig(lora_rank=4, lora_alpha=8))
    config = GRPOConfig(group_size=2, prompts_per_step=1, max_new_tokens=3, seed=seed)
    return GRPO(policy, lambda prompts, completions: [float(len(c)) for c in completions], ["a cat"], config)


def make_ddpo(seed: int = 0) -> Any:
    from resonance_os.diffusion.ddpo import DDPO, DDPOConfig
    from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig

    with seeded_torch(seed):
        unet = ConditionalUNet(UNetConfig(base_channels=8, channel_mults=[1, 2], image_size=8))
    config = DDPOConfig(samples_per_epoch=4, train_batch_size=4, num_steps=4, seed=seed)
    return DDPO(unet, lambda images, labels: images.mean(dim=(1, 2, 3)).double().numpy(), config)


# (factory, budget for a few metric rows, calls of the callback it takes to pass that budget)
TRAINERS: dict[str, tuple[Callable[..., Any], int]] = {
    "PPO": (make_ppo, 96),
    "SAC": (make_sac, 110),  # episodes of 50 steps: rows at 50 and 100
    "GPController": (make_gp, 100),
    "GRPO": (make_grpo, 3),
    "DDPO": (make_ddpo, 12),  # epochs of 4 sampled images: rows at 4, 8, 12
}


@pytest.fixture(params=list(TRAINERS))
def trainer(request: pytest.FixtureRequest) -> tuple[str, Callable[..., Any], int]:
    factory, budget = TRAINERS[request.param]
    return request.param, factory, budget


def test_every_trainer_has_the_shared_learn_signature(trainer):
    name, factory, _ = trainer
    model = factory()
    assert isinstance(model, RLAlgorithm)
    params = inspect.signature(model.learn).parameters
    assert params["callback"].default is None
    assert params["progress_bar"].default is False, f"{name}: progress_bar defaults to False, as SB3"
    assert params["reset_num_timesteps"].default is True


def test_callback_gets_model_and_latest_metrics_and_can_stop(trainer):
    name, factory, budget = trainer
    model = factory()
    calls: list[tuple[Any, dict[str, Any]]] = []

    def callback(m: Any, metrics: dict[str, Any]) -> bool:
        calls.append((m, dict(metrics)))
        return len(calls) < 2

    model.learn(budget, callback=callback)
    assert len(calls) == 2 and all(m is model for m, _ in calls)
    assert calls[-1][1]["timesteps"] == model.num_timesteps < budget
    if name != "SAC":  # SAC calls back after every env step, between its metric rows
        assert calls[-1][1] == model.history[-1]


def test_history_keeps_every_row_across_learn_calls(trainer):
    name, factory, budget = trainer
    model = factory()
    model.learn(budget)
    first = len(model.history)
    assert first >= 2 and model.history[-1]["timesteps"] <= model.num_timesteps
    model.learn(budget, reset_num_timesteps=False)
    steps = [row["timesteps"] for row in model.history]
    assert len(model.history) > first and steps == sorted(steps)


def test_checkpoint_metadata_has_the_shared_keys(trainer, tmp_path):
    name, factory, budget = trainer
    model = factory()
    model.learn(budget)
    model.save(tmp_path / "ckpt")
    metadata = json.loads((tmp_path / "ckpt" / "metadata.json").read_text())
    assert set(CHECKPOINT_KEYS) <= set(metadata)
    assert metadata["num_timesteps"] == model.num_timesteps
    assert metadata["last_metrics"] == model.history[-1]


def test_seeding_leaves_the_global_torch_rng_alone(trainer):
    name, factory, budget = trainer
    torch.manual_seed(123)
    before = torch.get_rng_state()
    model = factory(seed=5)
    model.learn(budget)
    assert torch.equal(torch.get_rng_state(), before), f"{name} read or advanced torch's global RNG"


@pytest.mark.parametrize("factory", [make_ppo, make_sac], ids=["PPO", "SAC"])
def test_same_seed_same_weights_whatever_the_global_rng(factory):
    torch.manual_seed(1)
    a = factory(seed=9)
    torch.manual_seed(2)
    b = factory(seed=9)
    net_a, net_b = (m.policy if isinstance(m, PPO) else m.actor for m in (a, b))
    for p, q in zip(net_a.state_dict().values(), net_b.state_dict().values()):
        assert torch.equal(p, q)


def _rewrite_metadata(folder: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = folder / "metadata.json"
    metadata = json.loads(path.read_text())
    change(metadata)
    path.write_text(json.dumps(metadata))


def test_sac_checkpoint_of_an_older_build_still_loads(tmp_path):
    """Before the shared contract SAC wrote ``timesteps`` and ``{low, high, shape}`` space descriptions."""
    model = make_sac()
    model.learn(60)
    model.save(tmp_path / "old")

    def to_old_format(metadata: dict[str, Any]) -> None:
        metadata["timesteps"] = metadata.pop("num_timesteps")
        metadata.pop("last_metrics")
        for key in ("observation_space", "action_space"):
            space = metadata[key]
            metadata[key] = {"low": space["low"], "high": space["high"], "shape": space["shape"]}

    _rewrite_metadata(tmp_path / "old", to_old_format)
    loaded = SAC.load(tmp_path / "old", env=gymnasium.make("Pendulum-v1"))
    assert loaded.num_timesteps == 60
    obs = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -2.0]], dtype=np.float32)
    np.testing.assert_array_equal(loaded.predict(obs)[0], model.predict(obs)[0])
    with pytest.raises(EnvMismatchError, match="observation space"):
        SAC.load(tmp_path / "old", env=gymnasium.make("MountainCarContinuous-v0"))


def test_gp_checkpoint_of_an_older_build_still_loads(tmp_path):
    model = make_gp().learn(60)
    model.save(tmp_path / "old")
    _rewrite_metadata(tmp_path / "old", lambda m: m.update(timesteps=m.pop("num_timesteps")))
    assert GPController.load(tmp_path / "old").num_timesteps == model.num_timesteps > 0


def test_a_callback_taking_only_the_model_still_works_with_a_deprecation_warning():
    model, seen = make_sac(), []
    with pytest.warns(DeprecationWarning, match=r"\(model, metrics\)"):
        model.learn(5, callback=lambda m: seen.append(m.num_timesteps))
    assert seen == [1, 2, 3, 4, 5]


def test_sac_takes_observations_as_ppo_does():
    """Box observations of any shape are flattened and Discrete ones one-hot encoded, as in PPO."""
    actions = gymnasium.spaces.Box(-2.0, 2.0, (2,), np.float32)
    grid = SAC("MlpPolicy", None, observation_space=gymnasium.spaces.Box(0, 1, (2, 3)), action_space=actions,
               seed=0, **SMALL_SAC)  # fmt: skip
    assert grid.predict(np.zeros((2, 3)))[0].shape == (2,)
    assert grid.predict(np.zeros((4, 2, 3)))[0].shape == (4, 2)
    cells = SAC("MlpPolicy", None, observation_space=gymnasium.spaces.Discrete(5), action_space=actions,
                seed=0, **SMALL_SAC)  # fmt: skip
    assert cells.predict(3)[0].shape == (2,) and cells.predict(np.array([0, 4]))[0].shape == (2, 2)
    with pytest.raises(EnvMismatchError, match="does not fit"):
        grid.predict(np.zeros(5))


def _sac_weights_after_training() -> torch.Tensor:
    model = make_sac(seed=3)
    model.learn(60)
    return torch.cat([model._actor_flat.param.detach(), model._critic_flat.param.detach()])


def test_sac_without_torchs_private_fused_adam_trains_identically(monkeypatch):
    """SAC calls torch's private ``_fused_adam_`` for speed; without it (or with another signature)
    it falls back to ``optimizer.step()``, which runs the same maths."""
    fast = _sac_weights_after_training()
    monkeypatch.setattr(sac_module, "_fused_adam_kernel", None)
    torch.testing.assert_close(_sac_weights_after_training(), fast, rtol=0, atol=0)

    def changed_signature(*args: Any, **kwargs: Any) -> None:
        raise TypeError("_fused_adam_() got an unexpected keyword argument 'beta1'")

    monkeypatch.setattr(sac_module, "_fused_adam_kernel", changed_signature)
    torch.testing.assert_close(_sac_weights_after_training(), fast, rtol=0, atol=0)
    assert sac_module._fused_adam_kernel is None
