"""ActorCritic: the hand-written backward equals autograd, the HRV configuration, architecture options."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from resonance_os.rl.algorithms.ppo import PPOConfig, PPOLoss
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.policies import HRV_POLICY_KWARGS, ActorCritic, make_actor_critic


@pytest.fixture
def float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


def autograd_forward(net: ActorCritic, obs: torch.Tensor):
    """The same network in plain autograd ops, on the module's own parameters."""
    outs = []
    for trunk in net.trunks:
        h = obs.unsqueeze(0).expand(trunk.k, *obs.shape)
        for weight, bias in trunk.layers:
            h = trunk.act(torch.baddbmm(bias, h, weight))
        outs.append(h)
    params = net.action_net(outs[0][0])
    if net.squash_output:
        params = net.action_centre + net.action_half_range * torch.tanh(params)
    return params, net.value_net(outs[-1][-1]).squeeze(-1), net.log_std


def autograd_loss(net, params, values, log_std, actions, old_log_probs, adv, returns, old_values, cfg):
    """SB3's PPO loss written plainly (torch.min of the two surrogates, optional value clipping)."""
    log_probs, entropy = net.log_prob_entropy(params, log_std, actions)
    ratio = torch.exp(log_probs - old_log_probs)
    policy_loss = -torch.min(adv * ratio, adv * ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range)).mean()
    if cfg.clip_range_vf is not None:
        values = old_values + (values - old_values).clamp(-cfg.clip_range_vf, cfg.clip_range_vf)
    return policy_loss - cfg.ent_coef * entropy + cfg.vf_coef * ((values - returns) ** 2).mean()


ARCHITECTURES = [
    {},
    {"share_features_extractor": True, "activation": "relu"},
    {"net_arch": {"pi": [8], "vf": [5, 6]}, "activation": "elu"},
    {"net_arch": [7, 9, 5], "activation": "silu", "squash_output": True},
    {"net_arch": [], "activation": "gelu"},
    {"activation": "leaky_relu"},
]


SPACES = {"box": gym.spaces.Box(-1.0, 2.0, (3,)), "discrete": gym.spaces.Discrete(4)}
CASES = [
    pytest.param(SPACES[space], kwargs, id=f"{space}-" + (",".join(map(str, kwargs.values())) or "default"))
    for space in SPACES
    for kwargs in ARCHITECTURES
    if space == "box" or not kwargs.get("squash_output")  # squashing is Box-only
]


@pytest.mark.parametrize(("space", "kwargs"), CASES)
@pytest.mark.parametrize("clip_range_vf", [None, 0.1])
def test_hand_written_backward_equals_autograd(float64, space, kwargs, clip_range_vf):
    gen = torch.Generator().manual_seed(0)
    cfg = PPOConfig(ent_coef=0.05, clip_range_vf=clip_range_vf)
    net = ActorCritic(5, space, generator=gen, **kwargs)
    with torch.no_grad():
        net.flat.param.add_(0.1 * torch.randn(net.flat.param.shape, generator=gen))
    batch = 32
    obs = torch.randn(batch, 5, generator=gen)
    with torch.no_grad():
        params, _, log_std = net(obs)
        actions = net.act(params, log_std, net.sample_noise((batch,), gen))
        old_log_probs = net.log_prob_entropy(params, log_std, actions)[0]
        old_log_probs += 0.3 * torch.randn(batch, generator=gen)  # some ratios fall outside the clip range
    adv, returns = torch.randn(batch, generator=gen), torch.randn(batch, generator=gen)
    old_values = 0.1 * torch.randn(batch, generator=gen)

    params, values, log_std = net(obs)
    loss, _, _ = PPOLoss.apply(
        params, log_std, values, net, actions, old_log_probs, adv, returns, old_values, cfg
    )
    (fast,) = torch.autograd.grad(loss, [net.flat.param])

    ref_loss = autograd_loss(
        net, *autograd_forward(net, obs), actions, old_log_probs, adv, returns, old_values, cfg
    )
    ref = torch.autograd.grad(ref_loss, net.flat.params, allow_unused=True)
    ref_flat = torch.cat(
        [(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(ref, net.flat.params)]
    )
    assert loss.item() == pytest.approx(ref_loss.item(), abs=1e-12)
    assert torch.allclose(fast, ref_flat, atol=1e-12)


def test_hrv_configuration_has_the_spec_shapes_and_tanh_scaled_actions():
    low, high = np.full(8, -2.0, np.float32), np.full(8, 3.0, np.float32)
    net = make_actor_critic(8, gym.spaces.Box(low, high), HRV_POLICY_KWARGS, torch.Generator().manual_seed(0))
    (trunk,) = net.trunks
    assert trunk.k == 2  # separate policy and value networks, stored stacked
    assert [tuple(w.shape) for w in trunk.weights] == [(2, 8, 64), (2, 64, 128), (2, 128, 64)]
    assert tuple(net.action_net.weight.shape) == (8, 64) and tuple(net.value_net.weight.shape) == (1, 64)
    obs = torch.randn(16, 8)
    with torch.no_grad():
        mean, values, log_std = net(obs)
        assert mean.shape == (16, 8) and values.shape == (16,) and log_std.shape == (8,)
        assert torch.allclose(mean, torch.full((16, 8), 0.5), atol=0.05)  # near the centre at init
        net.action_net.weight.mul_(1e4)  # saturate: the mean reaches the bounds, never beyond
        mean, _, _ = net(obs)
    assert mean.min() >= -2.0 and mean.max() <= 3.0
    assert (mean < -1.99).any() and (mean > 2.99).any()
    shared = make_actor_critic(
        8, gym.spaces.Box(low, high), {**HRV_POLICY_KWARGS, "share_features_extractor": True}, None
    )
    assert shared.trunks[0].k == 1 and shared.layout == "shared"


def test_orthogonal_init_uses_sb3_gains():
    net = ActorCritic(4, gym.spaces.Discrete(3), generator=torch.Generator().manual_seed(0))
    w = net.trunks[0].weights[1][0].T  # (out, in) of the policy's second layer
    assert torch.allclose(w @ w.T, 2.0 * torch.eye(64), atol=1e-4)  # orthogonal with gain sqrt(2)
    head = net.action_net.weight
    assert torch.allclose(head @ head.T, 1e-4 * torch.eye(3), atol=1e-7)  # gain 0.01
    assert all(torch.count_nonzero(b) == 0 for b in net.trunks[0].biases)


def test_parameters_are_views_of_one_flat_tensor_and_state_dicts_load():
    net = ActorCritic(3, gym.spaces.Box(-1.0, 1.0, (2,)))
    assert net.flat.param.numel() == sum(p.numel() for p in net.parameters())
    with torch.no_grad():
        net.flat.param.zero_()
    assert all(torch.count_nonzero(p) == 0 for p in net.parameters())
    other = ActorCritic(3, gym.spaces.Box(-1.0, 1.0, (2,)), generator=torch.Generator().manual_seed(1))
    net.load_state_dict(other.state_dict())
    assert torch.equal(net.flat.param, other.flat.param)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"activation": "swish"}, "activation"),
        ({"net_arch": [64, 0]}, "positive integers"),
        ({"net_arch": {"pi": [8]}}, "'pi' and 'vf'"),
        ({"net_arch": {"pi": [8], "vf": [8]}, "share_features_extractor": True}, "list net_arch"),
        ({"width": 3}, "unknown policy_kwargs"),
    ],
)
def test_bad_policy_kwargs_name_the_problem(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make_actor_critic(3, gym.spaces.Discrete(2), kwargs, None)


def test_squash_output_needs_a_bounded_box():
    with pytest.raises(ConfigError, match="finite action bounds"):
        ActorCritic(3, gym.spaces.Box(-np.inf, np.inf, (2,)), squash_output=True)
    with pytest.raises(ConfigError, match="Box"):
        ActorCritic(3, gym.spaces.Discrete(2), squash_output=True)
