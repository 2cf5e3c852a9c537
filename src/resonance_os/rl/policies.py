"""Actor-critic networks for on-policy algorithms, built for low per-call overhead.

``ActorCritic`` maps a flat observation batch ``(B, obs_dim)`` to the action distribution's
parameters, a value ``(B,)`` and (for Box actions) the log-std:

* **Box** actions: a diagonal Gaussian whose mean is a linear head on the policy features and whose
  log-std is one state-independent parameter vector (as Stable-Baselines3, initialised to
  ``log_std_init``). With ``squash_output=True`` the mean passes through ``tanh`` and is scaled to
  the action bounds, ``mean = centre + half_range * tanh(z)``; the Gaussian sample is clipped to the
  bounds before it reaches the environment, as for the unsquashed policy.
* **Discrete** actions: a categorical over ``n`` logits.

Architecture (``policy_kwargs``): ``net_arch`` is a list of hidden widths used by both the policy
and the value network, or ``dict(pi=[...], vf=[...])``; ``activation`` names the hidden activation;
``share_features_extractor=True`` makes the hidden layers one trunk feeding both heads. Weights are
orthogonal with SB3's gains (hidden sqrt(2), policy head 0.01, value head 1), biases zero.

Speed (PPO's time on small networks is per-operation overhead, not arithmetic):

* policy and value networks of the same widths are stored *stacked*, ``(2, in, out)`` per layer,
  and evaluated together: one batched matmul per layer for both;
* all parameters live in one flat tensor (:class:`~resonance_os.rl.flat_params.FlatParameters`),
  and the whole network is **one autograd node** (:class:`_ActorCriticFunction`) whose backward is
  written out and returns the flat gradient directly, so Adam, grad clipping and zeroing each touch
  one tensor;
* log-probs and entropies are computed by formula, without ``torch.distributions`` objects.

The spec's HRV network is the configuration :data:`HRV_POLICY_KWARGS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from resonance_os.rl.errors import ConfigError
from resonance_os.rl.flat_params import FlatParameters

HRV_POLICY_KWARGS: dict[str, Any] = {
    "net_arch": [64, 128, 64],
    "activation": "relu",
    "squash_output": True,
    "share_features_extractor": False,
}
"""The spec's HRV network: hidden [64, 128, 64] with ReLU, tanh-scaled policy head, a value head.

Pass ``share_features_extractor=True`` on top for the spec's shared feature layers.
"""

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_POLICY_KWARGS = {
    "net_arch",
    "activation",
    "share_features_extractor",
    "squash_output",
    "log_std_init",
    "ortho_init",
}

# Each activation: forward f(z), and backward (grad, z, y=f(z)) -> grad * f'(z) as one aten kernel.
_ACTIVATIONS: dict[str, tuple[Callable[..., torch.Tensor], Callable[..., torch.Tensor]]] = {
    "tanh": (torch.tanh, lambda g, z, y: torch.ops.aten.tanh_backward(g, y)),
    "relu": (torch.relu, lambda g, z, y: torch.ops.aten.threshold_backward(g, y, 0)),
    "leaky_relu": (F.leaky_relu, lambda g, z, y: torch.ops.aten.leaky_relu_backward(g, z, 0.01, False)),
    "elu": (F.elu, lambda g, z, y: torch.ops.aten.elu_backward(g, 1.0, 1, 1, False, z)),
    "gelu": (F.gelu, lambda g, z, y: torch.ops.aten.gelu_backward(g, z)),
    "silu": (F.silu, lambda g, z, y: torch.ops.aten.silu_backward(g, z)),
}


class StackedMLP(nn.Module):
    """``k`` MLPs of identical widths stored as one: weights ``(k, in, out)``, biases ``(k, 1, out)``.

    :meth:`forward` takes ``(B, in_dim)`` and returns ``(k, B, hidden[-1])`` (``(k, B, in_dim)`` when
    ``hidden`` is empty) plus what :meth:`backward` needs.
    """

    def __init__(self, k: int, in_dim: int, hidden: Sequence[int], activation: str) -> None:
        super().__init__()
        self.k = k
        self.out_dim = hidden[-1] if hidden else in_dim
        self.act, self.act_backward = _ACTIVATIONS[activation]
        widths = [in_dim, *hidden]
        self.weights = nn.ParameterList(
            nn.Parameter(torch.empty(k, a, b)) for a, b in zip(widths, widths[1:])
        )
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(k, 1, b)) for b in widths[1:])
        self.layers = tuple(zip(self.weights, self.biases))  # plain tuple: ParameterList indexing is slow

    def reset_parameters(self, gain: float, generator: torch.Generator | None) -> None:
        """Orthogonal init of each of the ``k`` networks' layers (as ``nn.Linear`` weights ``(out, in)``)."""
        with torch.no_grad():
            for weight, bias in self.layers:
                for i in range(self.k):
                    w = torch.empty(weight.shape[2], weight.shape[1])
                    nn.init.orthogonal_(w, gain=gain, generator=generator)
                    weight[i].copy_(w.T)
                bias.zero_()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """``h <- act(b + h @ W)`` per layer; returns the output and the saved ``[h_0, z_1, h_1, z_2, h_2, ...]``."""
        h = x.unsqueeze(0).expand(self.k, *x.shape)
        saved = [h]
        for weight, bias in self.layers:
            z = torch.baddbmm(bias, h, weight)
            h = self.act(z)
            saved += [z, h]
        return h, saved

    def backward(
        self, grad: torch.Tensor, saved: list[torch.Tensor]
    ) -> list[tuple[nn.Parameter, torch.Tensor]]:
        """Gradients of every weight and bias given ``grad`` of the output ``(k, B, out)``.

        Per layer from the top: ``g <- act_backward(g)``; ``dW = h_in^T g``; ``db = sum_B g``; ``g <- g W^T``.
        """
        grads: list[tuple[nn.Parameter, torch.Tensor]] = []
        for layer in reversed(range(len(self.layers))):
            weight, bias = self.layers[layer]
            h_in, z, h = saved[2 * layer], saved[2 * layer + 1], saved[2 * layer + 2]
            grad = self.act_backward(grad, z, h)
            grads.append((bias, grad.sum(1, keepdim=True)))
            grads.append((weight, torch.bmm(h_in.transpose(1, 2), grad)))
            if layer:
                grad = torch.bmm(grad, weight.transpose(1, 2))
        return grads


class ActorCritic(nn.Module):
    """Policy and value network for a Box or Discrete action space.

    Args:
        obs_dim: length of the flat observation.
        action_space: ``gymnasium.spaces.Box`` (1-D) or ``Discrete``.
        net_arch: hidden widths (list, the same layout for pi and vf) or ``dict(pi=[...], vf=[...])``;
            default ``[64, 64]``.
        activation: hidden activation, one of tanh, relu, leaky_relu, elu, gelu, silu; default
            ``"tanh"`` (SB3's).
        share_features_extractor: one trunk for both heads (list ``net_arch`` only); default False.
        squash_output: Box only; tanh-scale the Gaussian mean to the action bounds; default False.
        log_std_init: initial log standard deviation of the Gaussian; default 0.0.
        ortho_init: orthogonal initialisation with SB3 gains; default True.
        generator: torch RNG for the initialisation (seeding).

    All parameters are views into ``self.flat.param`` after construction; do not cast or move the
    module (``.double()``, ``.to()``) afterwards.
    """

    def __init__(
        self,
        obs_dim: int,
        action_space: gym.Space,
        *,
        net_arch: Sequence[int] | dict[str, Sequence[int]] = (64, 64),
        activation: str = "tanh",
        share_features_extractor: bool = False,
        squash_output: bool = False,
        log_std_init: float = 0.0,
        ortho_init: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ConfigError(
                f"policy_kwargs activation {activation!r} is unknown; choose one of {sorted(_ACTIVATIONS)}"
            )
        pi_arch, vf_arch = _split_arch(net_arch, share_features_extractor)
        if isinstance(action_space, gym.spaces.Discrete):
            self.continuous = False
            out_dim = int(action_space.n)
            if squash_output:
                raise ConfigError("squash_output=True needs a Box action space; drop it for Discrete actions")
        elif isinstance(action_space, gym.spaces.Box) and len(action_space.shape) == 1:
            self.continuous = True
            out_dim = int(action_space.shape[0])
        else:
            raise ConfigError(
                f"action space {action_space} is not supported; use a 1-D Box or a Discrete space"
            )
        self.action_dim = out_dim
        self.squash_output = squash_output
        # trunks: one shared stack, one stack of two (pi, vf) when the widths agree, or two stacks
        self.layout = "shared" if share_features_extractor else "twin" if pi_arch == vf_arch else "separate"
        if self.layout == "separate":
            self.trunks = nn.ModuleList(
                [StackedMLP(1, obs_dim, pi_arch, activation), StackedMLP(1, obs_dim, vf_arch, activation)]
            )
        else:
            self.trunks = nn.ModuleList(
                [StackedMLP(1 if self.layout == "shared" else 2, obs_dim, pi_arch, activation)]
            )
        self.action_net = nn.Linear(self.trunks[0].out_dim, out_dim)
        self.value_net = nn.Linear(self.trunks[-1].out_dim, 1)
        self.log_std = nn.Parameter(torch.full((out_dim if self.continuous else 0,), float(log_std_init)))
        if self.continuous:
            low = torch.as_tensor(action_space.low, dtype=torch.float32)
            high = torch.as_tensor(action_space.high, dtype=torch.float32)
            if squash_output and not (torch.isfinite(low).all() and torch.isfinite(high).all()):
                raise ConfigError(
                    "squash_output=True needs finite action bounds; bound the Box or drop squash_output"
                )
            self.register_buffer("action_centre", (high + low) / 2)
            self.register_buffer("action_half_range", (high - low) / 2)
        if ortho_init:
            for trunk in self.trunks:
                trunk.reset_parameters(math.sqrt(2.0), generator)
            for head, gain in ((self.action_net, 0.01), (self.value_net, 1.0)):
                nn.init.orthogonal_(head.weight, gain=gain, generator=generator)
                nn.init.zeros_(head.bias)
        self.flat = FlatParameters(self)
        # plain references for the hot path (attribute lookups through nn.Module cost microseconds each)
        self.head_params = (
            self.action_net.weight,
            self.action_net.bias,
            self.value_net.weight,
            self.value_net.bias,
        )

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Distribution parameters ``(B, action_dim)`` (Gaussian mean or logits), values ``(B,)``, log-std ``(A,)``
        (empty for Discrete). With gradients on, one autograd node whose input is the flat parameter
        vector; without (rollouts, ``predict``), the plain computation."""
        if torch.is_grad_enabled():
            return _ActorCriticFunction.apply(obs, self.flat.param, self)
        return self.compute(obs)[:3]

    def compute(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple[Any, ...]]:
        """The forward computation; also returns what the backward needs."""
        outputs, saved = zip(*(trunk(obs) for trunk in self.trunks))
        pi_h = outputs[0][0]
        vf_h = outputs[-1][-1]
        pi_w, pi_b, vf_w, vf_b = self.head_params
        head = torch.addmm(pi_b, pi_h, pi_w.T)
        squashed = None
        if self.squash_output:
            squashed = torch.tanh(head)
            head = torch.addcmul(self.action_centre, self.action_half_range, squashed)
        values = torch.addmm(vf_b, vf_h, vf_w.T).squeeze(1)
        return head, values, self.log_std.detach(), (saved, pi_h, vf_h, squashed)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values ``(B,)``."""
        return self.forward(obs)[1]

    def sample_noise(self, shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
        """Noise for :meth:`act`, ``(*shape, action_dim)``: standard normal (Box) or standard Gumbel (Discrete).

        Drawing a whole rollout's noise at once replaces a sampling call per step by one per rollout.
        """
        if self.continuous:
            return torch.randn((*shape, self.action_dim), generator=generator)
        uniform = torch.rand((*shape, self.action_dim), generator=generator).clamp_(min=1e-20)
        return -torch.log(-torch.log(uniform))

    def act(
        self, params: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Actions from distribution parameters: ``mu + sigma * noise`` (Box) or ``argmax(logits + noise)``
        (Discrete, the Gumbel-max trick); ``noise=None`` gives the mode. Returns ``(B, action_dim)`` floats
        for Box and a ``(B, 1)`` float column of indices for Discrete (the rollout buffer's layout)."""
        if self.continuous:
            return params if noise is None else torch.addcmul(params, noise, log_std.exp())
        return (params if noise is None else params + noise).argmax(-1, keepdim=True).float()

    def log_prob_entropy(
        self, params: torch.Tensor, log_std: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities ``(B,)`` of ``actions`` (``(B, action_dim)``, or ``(B, 1)`` indices) and the mean
        entropy over the batch (a scalar)."""
        if self.continuous:
            # log N(a; mu, sigma) = -((a - mu) / sigma)^2 / 2 - log sigma - log sqrt(2 pi), summed over dims;
            # the entropy sum(log sigma) + A (1/2 + log sqrt(2 pi)) does not depend on the state
            z = (actions - params) * torch.exp(-log_std)
            log_std_sum = log_std.sum()
            log_probs = -0.5 * z.square().sum(-1) - (log_std_sum + self.action_dim * _LOG_SQRT_2PI)
            return log_probs, log_std_sum + self.action_dim * (0.5 + _LOG_SQRT_2PI)
        log_p = torch.log_softmax(params, -1)
        log_probs = log_p.gather(-1, actions.long()).squeeze(-1)
        return log_probs, -(log_p.exp() * log_p).sum(-1).mean()


class _ActorCriticFunction(torch.autograd.Function):
    """``ActorCritic`` forward as one autograd node: ``(obs, flat_params) -> (dist_params, values, log_std)``.

    Backward (``g_*`` the incoming gradients): the heads are linear, ``dW = g^T h``, ``db = sum g``,
    ``g_h = g W`` (through ``half_range * (1 - tanh^2)`` first when the mean is squashed); the
    trunks back-propagate with :meth:`StackedMLP.backward`; all gradients are concatenated in the
    flat parameter order, so autograd hands Adam a single gradient tensor.
    """

    @staticmethod
    def forward(
        ctx: Any, obs: torch.Tensor, flat_param: torch.Tensor, net: ActorCritic
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        head, values, log_std, ctx.saved = net.compute(obs)
        ctx.net = net
        return head, values, log_std

    @staticmethod
    def backward(
        ctx: Any, g_params: torch.Tensor | None, g_values: torch.Tensor | None, g_log_std: torch.Tensor | None
    ) -> tuple[None, torch.Tensor, None]:
        net = ctx.net
        saved, pi_h, vf_h, squashed = ctx.saved
        if g_params is None:
            g_params = torch.zeros(len(pi_h), net.action_dim)
        if g_values is None:
            g_values = torch.zeros(len(vf_h))
        if squashed is not None:
            g_params = torch.ops.aten.tanh_backward(g_params * net.action_half_range, squashed)
        pi_w, pi_b, vf_w, vf_b = net.head_params
        grads: dict[nn.Parameter, torch.Tensor] = {
            pi_w: g_params.T @ pi_h,
            pi_b: g_params.sum(0),
            vf_w: g_values.unsqueeze(0) @ vf_h,
            vf_b: g_values.sum(0, keepdim=True),
            net.log_std: g_log_std if g_log_std is not None else torch.zeros_like(net.log_std),
        }
        g_pi_h = g_params @ pi_w
        g_vf_h = torch.outer(g_values, vf_w[0])
        if net.layout == "shared":
            trunk_grads = [(g_pi_h + g_vf_h).unsqueeze(0)]
        elif net.layout == "twin":
            trunk_grads = [torch.stack((g_pi_h, g_vf_h))]
        else:
            trunk_grads = [g_pi_h.unsqueeze(0), g_vf_h.unsqueeze(0)]
        for trunk, grad, trunk_saved in zip(net.trunks, trunk_grads, saved):
            grads.update(trunk.backward(grad, trunk_saved))
        ctx.saved = None
        return None, net.flat.gather(grads), None


def make_actor_critic(
    obs_dim: int, action_space: gym.Space, policy_kwargs: dict[str, Any], generator: torch.Generator | None
) -> ActorCritic:
    """Build an :class:`ActorCritic` from ``policy_kwargs``, rejecting unknown keys with a ``ConfigError``."""
    unknown = set(policy_kwargs) - _POLICY_KWARGS
    if unknown:
        raise ConfigError(
            f"unknown policy_kwargs {sorted(unknown)}; allowed keys are {sorted(_POLICY_KWARGS)}"
        )
    return ActorCritic(obs_dim, action_space, generator=generator, **policy_kwargs)


def _split_arch(
    net_arch: Sequence[int] | dict[str, Sequence[int]], shared: bool
) -> tuple[list[int], list[int]]:
    if isinstance(net_arch, dict):
        if shared:
            raise ConfigError("share_features_extractor=True needs a list net_arch, not dict(pi=..., vf=...)")
        if set(net_arch) != {"pi", "vf"}:
            raise ConfigError(
                f"net_arch dict must have exactly the keys 'pi' and 'vf', got {sorted(net_arch)}"
            )
        pi, vf = list(net_arch["pi"]), list(net_arch["vf"])
    else:
        pi = vf = list(net_arch)
    for width in pi + vf:
        if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width <= 0:
            raise ConfigError(f"net_arch widths must be positive integers, got {width!r}")
    return pi, vf
