"""One PPO update of ours equals Stable-Baselines3's on the same weights and rollout (SB3 is a bench-only dep).

With one minibatch per epoch the update does not depend on the shuffling, so starting from the
same weights and the same rollout both libraries must end at the same weights: this checks the
loss (clipped surrogate, value clipping, entropy), per-minibatch advantage normalisation, the
global grad-norm clip and Adam (eps 1e-5) together.
"""

from __future__ import annotations

import pytest
import torch

from resonance_os.rl import PPO

sb3 = pytest.importorskip("stable_baselines3")


def sb3_state_from_ours(model: PPO) -> dict[str, torch.Tensor]:
    """Our stacked (pi, vf) weights ``(2, in, out)`` as SB3's MlpPolicy state dict."""
    (trunk,) = model.policy.trunks
    state = {"log_std": model.policy.log_std.detach().clone()} if model.policy.continuous else {}
    for layer, (weight, bias) in enumerate(trunk.layers):
        for i, net in enumerate(("policy_net", "value_net")):
            state[f"mlp_extractor.{net}.{2 * layer}.weight"] = weight[i].T.detach().clone()
            state[f"mlp_extractor.{net}.{2 * layer}.bias"] = bias[i, 0].detach().clone()
    for name, module in (("action_net", model.policy.action_net), ("value_net", model.policy.value_net)):
        state[f"{name}.weight"] = module.weight.detach().clone()
        state[f"{name}.bias"] = module.bias.detach().clone()
    return state


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "CartPole-v1"])
@pytest.mark.parametrize("clip_range_vf", [None, 0.05])
def test_one_update_matches_stable_baselines3(env_id, clip_range_vf):
    from stable_baselines3.common.logger import configure

    settings = dict(
        n_steps=64,
        batch_size=64,
        n_epochs=4,
        learning_rate=3e-3,
        ent_coef=0.01,
        vf_coef=0.5,
        max_grad_norm=0.5,
        clip_range=0.2,
        clip_range_vf=clip_range_vf,
        gamma=0.9,
        gae_lambda=0.95,
    )
    ours = PPO("MlpPolicy", env_id, seed=0, **settings)
    ours._last_obs = ours._observe(ours.env.reset(seed=0)[0], update=True)
    ours._collect_rollout()
    theirs = sb3.PPO("MlpPolicy", env_id, device="cpu", seed=0, **settings)
    theirs.policy.load_state_dict(sb3_state_from_ours(ours))
    theirs.set_logger(configure(None, []))
    theirs._current_progress_remaining = 1.0
    buf, rb = ours.buffer, theirs.rollout_buffer
    rb.observations[:] = buf.observations
    rb.actions[:] = buf.actions
    rb.values[:] = buf.values
    rb.log_probs[:] = buf.log_probs
    rb.advantages[:] = buf.advantages
    rb.returns[:] = buf.returns
    rb.pos, rb.full = buf.n_steps, True

    ours._update(settings["learning_rate"])
    theirs.train()

    expected = theirs.policy.state_dict()
    ours_after = sb3_state_from_ours(ours)
    assert set(ours_after) == set(expected)
    for key, value in ours_after.items():
        # float32 agreement; a change of ent_coef, vf_coef, max_grad_norm or Adam's eps moves them >= 3e-4
        assert torch.allclose(value, expected[key], atol=1e-5), key
    before = ours.policy.action_net.bias.detach().clone()
    ours._update(settings["learning_rate"])  # the weights do move: the comparison is not of untouched copies
    assert not torch.equal(before, ours.policy.action_net.bias)
