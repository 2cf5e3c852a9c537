"""Soft actor-critic (SAC) for continuous actions, with Stable-Baselines3's defaults.

Haarnoja et al., "Soft Actor-Critic Algorithms and Applications" (2018). Per environment step one
transition is stored and (after ``learning_starts``) one gradient step is taken, in SB3's order:

1. entropy coefficient:  L(log alpha) = -mean(log alpha * (log pi(a~|s) + H_target))      (auto only)
2. critics (twin, clipped double Q):
       y = r + gamma (1 - terminated) (min_i Qbar_i(s', a') - alpha log pi(a'|s')),   a' ~ pi(.|s')
       L(Q) = 1/2 sum_i mean((Q_i(s, a) - y)^2)
3. actor:  L(pi) = mean(alpha log pi(a~|s) - min_i Q_i(s, a~)),   a~ = tanh(mu + sigma eps) (reparameterised)
4. Polyak averaging of the target critics: Qbar <- tau Q + (1 - tau) Qbar.

The policy is a tanh-squashed Gaussian whose log-std is clamped to [-20, 2]; its actions in [-1, 1] are
scaled to the Box bounds.

Speed (the update is bound by its 256x256 matrix products; everything else is overhead): in float32
the gradient step runs without autograd, with hand-written backward passes
(:mod:`~resonance_os.rl.mlp_backprop`) -- the twin critics are one stacked network (``baddbmm``), the
actor runs once on ``[s; s']``, the actor step back-propagates each sample through the critic
member attaining the minimum only and w.r.t. the action only (no critic weight gradients), each
network's weights, gradients and Adam state are one flat tensor (fused Adam kernel called directly
where this torch has it, else ``optimizer.step()``; Polyak averaging one ``lerp_``).
``_train_step_autograd`` is the same update through autograd (used for bfloat16 autocast, and by
the tests as the reference the fast update must match).
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium
import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from resonance_os.rl.checkpoint import load_checkpoint, save_checkpoint
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import (
    Callback,
    as_callback,
    checkpoint_metadata,
    draw_seed,
    seeded_torch,
    timesteps_from_metadata,
)
from resonance_os.rl.errors import CheckpointError, ConfigError, EnvMismatchError
from resonance_os.rl.flat_params import FlatParameters
from resonance_os.rl.logger import MetricsLogger
from resonance_os.rl.mlp_backprop import Cache, mlp_backward, mlp_forward
from resonance_os.rl.networks import activation_class, build_mlp
from resonance_os.rl.replay_buffer import ReplayBuffer
from resonance_os.rl.spaces import (
    as_observation,
    check_same_space,
    env_and_spaces,
    flat_obs_dim,
    flatten_obs,
    space_from_dict,
    space_to_dict,
)

LOG_2PI = math.log(2.0 * math.pi)
LOSS_NAMES = ("policy_loss", "value_loss", "entropy_loss", "ent_coef")
CHECKPOINT_FORMAT = 2  # 2: one flat parameter tensor per optimizer (1: per-parameter optimizer states)


@dataclass
class SACConfig(JsonConfig):
    """SAC hyperparameters; defaults are Stable-Baselines3's.

    ``ent_coef`` is ``"auto"`` (learned, starting at 1), ``"auto_<x>"`` (learned, starting at x) or a
    fixed float; ``target_entropy`` is ``"auto"`` (``-dim(A)``) or a float. ``log_interval`` counts
    episodes between metric rows. ``precision="bfloat16"`` runs the hidden layers of the gradient
    steps in bfloat16 autocast (output layers, losses and optimizer stay float32): faster on CPUs
    with AVX-512 BF16, not bit-compatible with SB3; the default ``"float32"`` is.
    """

    config_name: ClassVar[str] = "SAC"

    learning_rate: float = 3e-4
    buffer_size: int = 1_000_000
    learning_starts: int = 100
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.99
    train_freq: int = 1
    gradient_steps: int = 1
    target_update_interval: int = 1
    ent_coef: str | float = "auto"
    target_entropy: str | float = "auto"
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "relu"
    n_critics: int = 2
    log_std_min: float = -20.0
    log_std_max: float = 2.0
    log_interval: int = 4
    precision: str = "float32"
    seed: int | None = None

    def __post_init__(self) -> None:
        positive = ("learning_rate", "buffer_size", "batch_size", "train_freq", "n_critics", "log_interval")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ConfigError(f"SACConfig.{name}={getattr(self, name)} must be > 0")
        for name in ("learning_starts", "gradient_steps", "target_update_interval"):
            if getattr(self, name) < 0:
                raise ConfigError(f"SACConfig.{name}={getattr(self, name)} must be >= 0")
        if not 0 < self.tau <= 1:
            raise ConfigError(f"SACConfig.tau={self.tau} must be in (0, 1]")
        if not 0 <= self.gamma <= 1:
            raise ConfigError(f"SACConfig.gamma={self.gamma} must be in [0, 1]")
        if not self.net_arch or any(int(w) < 1 for w in self.net_arch):
            raise ConfigError(f"SACConfig.net_arch={self.net_arch} must be a non-empty list of widths >= 1")
        try:
            activation_class(self.activation)
        except ValueError as exc:
            raise ConfigError(f"SACConfig.activation: {exc}") from None
        self.initial_ent_coef()  # validates ent_coef
        if isinstance(self.target_entropy, str) and self.target_entropy != "auto":
            raise ConfigError(f"SACConfig.target_entropy={self.target_entropy!r} must be 'auto' or a number")
        if self.precision not in ("float32", "bfloat16"):
            raise ConfigError(f"SACConfig.precision={self.precision!r} must be 'float32' or 'bfloat16'")
        if self.log_std_min >= self.log_std_max:
            raise ConfigError(f"SACConfig.log_std_min={self.log_std_min} must be < log_std_max")

    def initial_ent_coef(self) -> tuple[float, bool]:
        """``(starting alpha, learned?)`` from ``ent_coef``."""
        if isinstance(self.ent_coef, str):
            if self.ent_coef == "auto":
                return 1.0, True
            if self.ent_coef.startswith("auto_"):
                try:
                    value = float(self.ent_coef[5:])
                except ValueError:
                    value = -1.0
                if value > 0:
                    return value, True
            raise ConfigError(
                f"SACConfig.ent_coef={self.ent_coef!r} must be 'auto', 'auto_<x>' or a number > 0"
            )
        if not self.ent_coef > 0:
            raise ConfigError(f"SACConfig.ent_coef={self.ent_coef} must be > 0")
        return float(self.ent_coef), False


class Actor(nn.Module):
    """Gaussian policy: ``obs (B, obs_dim) -> (mean, log_std)``, each ``(B, act_dim)``, from one fused head."""

    def __init__(self, obs_dim: int, act_dim: int, net_arch: list[int], activation: str) -> None:
        super().__init__()
        self.trunk = build_mlp(obs_dim, net_arch, activation=activation)
        self.head = nn.Linear(net_arch[-1], 2 * act_dim)

    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``[(weight (out, in), bias (out,)), ...]`` from input to head, for :mod:`~resonance_os.rl.mlp_backprop`."""
        return [(m.weight, m.bias) for m in self.modules() if isinstance(m, nn.Linear)]

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.trunk(obs)
        with torch.autocast("cpu", enabled=False):  # the head stays float32 under bf16 autocast
            mean, log_std = self.head(features.float()).chunk(2, dim=-1)
        return mean, log_std


class EnsembleCritic(nn.Module):
    """``n`` Q-networks ``Q_i(s, a)`` evaluated in one batched pass.

    Each member is initialised as ``build_mlp(obs_dim + act_dim, net_arch, 1)`` would be; the weights
    of layer ``l`` are stacked to shape ``(n, in_l, out_l)``. ``forward`` returns ``(n, B, 1)``.
    """

    def __init__(self, in_dim: int, net_arch: list[int], n: int, activation: str) -> None:
        super().__init__()
        members = [build_mlp(in_dim, net_arch, 1, activation=activation) for _ in range(n)]
        layers = [[m for m in member if isinstance(m, nn.Linear)] for member in members]
        self.weights = nn.ParameterList(
            nn.Parameter(torch.stack([layer[i].weight.detach().T for layer in layers]))
            for i in range(len(layers[0]))
        )
        self.biases = nn.ParameterList(
            nn.Parameter(torch.stack([layer[i].bias.detach().unsqueeze(0) for layer in layers]))
            for i in range(len(layers[0]))
        )
        self.activation = activation_class(activation)()

    def layers(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """``[(weight (n, in, out), bias (n, 1, out)), ...]``, for :mod:`~resonance_os.rl.mlp_backprop`."""
        return list(zip(self.weights, self.biases))

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        h = torch.matmul(torch.cat([obs, action], dim=-1), self.weights[0]) + self.biases[0]
        for w, b in zip(self.weights[1:-1], self.biases[1:-1]):
            h = torch.baddbmm(b, self.activation(h), w)
        with torch.autocast("cpu", enabled=False):  # Q values stay float32 under bf16 autocast
            return torch.baddbmm(self.biases[-1], self.activation(h).float(), self.weights[-1])


def squashed_sample(
    mean: torch.Tensor, log_std: torch.Tensor, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised tanh-Gaussian sample ``a = tanh(mean + std * eps)`` in [-1, 1] and ``log pi(a)`` (B, 1).

    ``log pi(a) = sum_j [N(u_j; mean_j, std_j) log-density - log(1 - a_j^2 + 1e-6)]`` (SB3's correction).
    """
    return _squash(mean, log_std, torch.randn(mean.shape, generator=generator))


def _squash(
    mean: torch.Tensor, log_std: torch.Tensor, eps: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`squashed_sample` for given standard-normal noise ``eps``."""
    action = torch.tanh(mean + log_std.exp() * eps)
    log_prob = -0.5 * eps.square() - log_std - 0.5 * LOG_2PI - torch.log1p(1e-6 - action.square())
    return action, log_prob.sum(dim=-1, keepdim=True)


class SAC:
    """Soft actor-critic with SB3's surface: ``SAC("MlpPolicy", env, **config)``; follows
    :mod:`resonance_os.rl.contract` (callbacks, ``history``, checkpoint keys, seeding) as PPO does.

    Args:
        policy: ``"MlpPolicy"`` (the only one).
        env: a gymnasium env (or its id) with Box observations (flattened) or Discrete ones (one-hot),
            as PPO takes them, and bounded 1-D Box actions; ``None`` only together with
            ``observation_space`` and ``action_space`` (inference only).
        log_dir: folder for ``metrics.jsonl``; every row is also kept in ``self.history``.
        tensorboard: also write TensorBoard scalars to ``log_dir``.
        **config: fields of :class:`SACConfig`.
    """

    algorithm = "SAC"

    def __init__(
        self,
        policy: str,
        env: gymnasium.Env | str | None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
        observation_space: spaces.Box | None = None,
        action_space: spaces.Box | None = None,
        **config: Any,
    ) -> None:
        if policy != "MlpPolicy":
            raise ConfigError(f"policy={policy!r} is not supported; SAC offers 'MlpPolicy'")
        self.config = SACConfig.from_dict(config)
        self.env, observation_space, action_space = env_and_spaces(
            env, observation_space, action_space, "SAC"
        )
        _check_spaces(observation_space, action_space)
        self.observation_space, self.action_space = observation_space, action_space
        self.log_dir, self.tensorboard = log_dir, tensorboard
        obs_dim = flat_obs_dim(observation_space)
        self.act_dim = int(np.prod(action_space.shape))
        self._low = action_space.low.astype(np.float32)
        self._scale = ((action_space.high - action_space.low) / 2.0).astype(np.float32)
        cfg = self.config
        seed = draw_seed(cfg.seed)
        self._generator = torch.Generator().manual_seed(seed)
        self._rng = np.random.default_rng(seed)
        with seeded_torch(seed):  # nn.Linear's default init draws from the global RNG: fork it
            self.actor = Actor(obs_dim, self.act_dim, cfg.net_arch, cfg.activation)
            self.critic = EnsembleCritic(obs_dim + self.act_dim, cfg.net_arch, cfg.n_critics, cfg.activation)
            self.critic_target = EnsembleCritic(
                obs_dim + self.act_dim, cfg.net_arch, cfg.n_critics, cfg.activation
            )
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.requires_grad_(False)
        alpha0, self.learn_ent_coef = cfg.initial_ent_coef()
        self.log_ent_coef = torch.tensor([math.log(alpha0)], requires_grad=self.learn_ent_coef)
        self.target_entropy = (
            -float(self.act_dim) if cfg.target_entropy == "auto" else float(cfg.target_entropy)
        )
        # one flat tensor per network: Adam, Polyak averaging and gradient buffers each touch one tensor
        self._actor_flat = FlatParameters(self.actor)
        self._critic_flat = FlatParameters(self.critic)
        self._target_flat = FlatParameters(self.critic_target)
        self._actor_grad, self._actor_grad_layers = _grad_buffer(self._actor_flat, self.actor.layers())
        self._critic_grad, self._critic_grad_layers = _grad_buffer(self._critic_flat, self.critic.layers())
        self._actor_layers, self._critic_layers = self.actor.layers(), self.critic.layers()
        self._target_layers = self.critic_target.layers()
        self._critic_member_layers = [  # member i's layers in nn.Linear layout (out, in), views
            [(w[i].t(), b[i, 0]) for w, b in self._critic_layers] for i in range(cfg.n_critics)
        ]
        self._activation, self._obs_dim = cfg.activation.lower(), obs_dim
        adam = {"lr": cfg.learning_rate, "fused": True}
        self.actor_optimizer = torch.optim.Adam([self._actor_flat.param], **adam)
        self.critic_optimizer = torch.optim.Adam([self._critic_flat.param], **adam)
        self.ent_coef_optimizer = (
            torch.optim.Adam([self.log_ent_coef], **adam) if self.learn_ent_coef else None
        )
        self.replay_buffer = ReplayBuffer(cfg.buffer_size, obs_dim, self.act_dim, seed=seed)
        self.num_timesteps = 0
        self._n_updates = 0
        self.history: list[dict[str, Any]] = []
        self.logger = MetricsLogger(None)  # the current (or last) learn call's logger

    def _flat_obs(self, observation: Any) -> np.ndarray:
        """One env observation -> flat float32 ``(obs_dim,)`` (Discrete: one-hot)."""
        return flatten_obs(self.observation_space, np.asarray(observation)[None])[0].astype(
            np.float32, copy=False
        )

    # --- acting ------------------------------------------------------------------------------------
    def predict(
        self, observation: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, None]:
        """Action(s) for ``observation`` (shape ``obs_shape`` or ``(batch, *obs_shape)``), scaled to the bounds."""
        obs = as_observation(observation, self.observation_space)
        single = obs.shape == self.observation_space.shape
        flat = flatten_obs(self.observation_space, obs[None] if single else obs).astype(
            np.float32, copy=False
        )
        if flat.shape[1] != self._obs_dim:
            raise EnvMismatchError(
                f"observation of shape {obs.shape} does not fit the model's observation space {self.observation_space}"
            )
        with torch.no_grad():
            mean, log_std = self.actor(torch.from_numpy(flat))
            if deterministic:
                squashed = torch.tanh(mean)
            else:
                log_std = log_std.clamp(self.config.log_std_min, self.config.log_std_max)
                squashed, _ = squashed_sample(mean, log_std, self._generator)
        action = self._low + (squashed.numpy() + 1.0) * self._scale
        return (action[0] if single else action), None

    # --- learning ----------------------------------------------------------------------------------
    def learn(
        self,
        total_timesteps: int,
        callback: Callback | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> SAC:
        """Interact for ``total_timesteps`` env steps, training after each; returns ``self``.

        A metrics row is recorded (``self.history``, ``log_dir``) every ``log_interval`` episodes.
        ``callback(model, metrics)`` runs after every env step (SAC's update), with the latest row's
        values and ``metrics["timesteps"] == model.num_timesteps``; returning ``False`` stops.
        """
        if self.env is None:
            raise ConfigError("this SAC model has no env; pass env= to SAC.load to keep training")
        if total_timesteps < 1:
            raise ConfigError(f"total_timesteps={total_timesteps} must be >= 1")
        cfg = self.config
        callback = as_callback(callback, "SAC")
        if reset_num_timesteps:
            self.num_timesteps = 0
        end = self.num_timesteps + int(total_timesteps)
        self.logger = MetricsLogger(
            self.log_dir, tensorboard=self.tensorboard, progress_bar=progress_bar,
            total_timesteps=end, description="SAC",
        )  # fmt: skip
        obs = self._flat_obs(self.env.reset(seed=cfg.seed)[0])
        episode_return, episodes = 0.0, 0
        last_row: dict[str, Any] = {}
        returns: deque[float] = deque(maxlen=100)
        losses: torch.Tensor | None = (
            None  # [policy_loss, value_loss, entropy_loss, ent_coef] of the last step
        )
        start, start_steps = time.perf_counter(), self.num_timesteps
        try:
            while self.num_timesteps < end:
                if self.num_timesteps < cfg.learning_starts:
                    squashed = self._rng.uniform(-1.0, 1.0, self.act_dim).astype(np.float32)
                else:
                    with torch.no_grad():
                        out = mlp_forward(
                            self._actor_layers, torch.from_numpy(obs)[None], self._activation, False
                        )[0]
                        mean, log_std = out.chunk(2, dim=-1)
                        log_std = log_std.clamp(cfg.log_std_min, cfg.log_std_max)
                        squashed = squashed_sample(mean, log_std, self._generator)[0][0].numpy()
                action = self._low + (squashed + 1.0) * self._scale
                next_obs, reward, terminated, truncated, _ = self.env.step(action)
                self.num_timesteps += 1
                episode_return += float(reward)
                next_obs = self._flat_obs(next_obs)
                self.replay_buffer.add(obs, squashed, reward, next_obs, terminated)
                obs = next_obs
                if terminated or truncated:
                    returns.append(episode_return)
                    episodes += 1
                    episode_return = 0.0
                    obs = self._flat_obs(self.env.reset()[0])
                    if episodes % cfg.log_interval == 0:
                        fps = (self.num_timesteps - start_steps) / max(time.perf_counter() - start, 1e-9)
                        last_row = self._record(returns, episodes, losses, fps)
                if self.num_timesteps > cfg.learning_starts and self.num_timesteps % cfg.train_freq == 0:
                    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.precision == "bfloat16"):
                        for _ in range(cfg.gradient_steps):
                            losses = self._train_step()
                self.logger.advance(self.num_timesteps)
                if (
                    callback is not None
                    and callback(self, {**last_row, "timesteps": self.num_timesteps}) is False
                ):
                    break
        finally:
            self.logger.close()
        return self

    def _record(
        self, returns: deque[float], episodes: int, losses: torch.Tensor | None, fps: float
    ) -> dict[str, Any]:
        """Log a metrics row (the last 100 episodes' returns, the last step's losses) and keep it in
        ``history``; returns it."""
        row = self.logger.record(
            {"episode_reward_mean": float(np.mean(returns)),
             "episode_reward_std": float(np.std(returns)), "fps": fps,
             "episodes": episodes, "n_updates": self._n_updates,
             **(dict(zip(LOSS_NAMES, losses.tolist())) if losses is not None else {})},
            self.num_timesteps,
        )  # fmt: skip
        self.history.append(row)
        return row

    def _train_step(self) -> torch.Tensor:
        """One gradient step on a replay minibatch (SB3 order: alpha, critics, actor, Polyak).

        Returns ``[policy_loss, value_loss, entropy_loss, ent_coef]``. float32 runs
        :meth:`_train_step_fast`; bfloat16 autocast needs autograd (:meth:`_train_step_autograd`).
        """
        if self.config.precision == "float32":
            with torch.no_grad():
                losses = self._train_step_fast()
        else:
            losses = self._train_step_autograd()
        self._n_updates += 1
        cfg = self.config
        if cfg.target_update_interval and self._n_updates % cfg.target_update_interval == 0:
            self._target_flat.param.data.lerp_(self._critic_flat.param.data, cfg.tau)  # Polyak
        return losses

    def _train_step_fast(self) -> torch.Tensor:
        """The update of :meth:`_train_step_autograd` with hand-written gradients (float32, no autograd).

        Same math, less work: the actor runs once on ``[s; s']`` (both with the pre-update weights);
        the critics' gradient in the actor step is taken w.r.t. the actions only, through the member
        that attains the minimum; gradients land in one flat tensor per optimizer.
        """
        cfg, n, act = self.config, self.config.batch_size, self._activation
        obs, actions, rewards, next_obs, terminated = self.replay_buffer.sample(n)
        out, actor_cache = mlp_forward(self._actor_layers, torch.cat([obs, next_obs]), act, stacked=False)
        mean, log_std = out.chunk(2, dim=-1)  # (2B, A) each: rows [:B] for s, [B:] for s'
        log_std_c = log_std.clamp(cfg.log_std_min, cfg.log_std_max)
        eps = torch.cat([torch.randn(mean[:n].shape, generator=self._generator) for _ in range(2)])
        squashed, log_prob = _squash(mean, log_std_c, eps)
        actions_pi, log_prob_pi = squashed[:n], log_prob[:n]

        ent_coef_loss = torch.zeros(())
        if self.ent_coef_optimizer is not None:  # L = -log(alpha) mean(log pi + H_target)
            entropy_gap = log_prob_pi.mean() + self.target_entropy
            ent_coef_loss = -self.log_ent_coef[0] * entropy_gap
            self.log_ent_coef.grad = -entropy_gap.reshape(1)
            _adam_step(self.ent_coef_optimizer)
        ent_coef = self.log_ent_coef.exp()[0]

        next_q, _ = mlp_forward(
            self._target_layers, torch.cat([next_obs, squashed[n:]], 1), act, stacked=True
        )
        target_q = rewards + (1.0 - terminated) * cfg.gamma * (next_q.min(0).values - ent_coef * log_prob[n:])
        q, cache = mlp_forward(self._critic_layers, torch.cat([obs, actions], 1), act, stacked=True)
        error = q - target_q  # (n_critics, B, 1); L = 1/2 sum_i mean(error_i^2), dL/dq = error / B
        critic_loss = 0.5 * error.square().mean(dim=(1, 2)).sum()
        mlp_backward(self._critic_layers, cache, error / n, act, True, self._critic_grad_layers)
        self._critic_flat.param.grad = self._critic_grad
        _adam_step(self.critic_optimizer)

        q_pi, cache = mlp_forward(self._critic_layers, torch.cat([obs, actions_pi], 1), act, stacked=True)
        min_q, member = q_pi.min(dim=0)  # (B, 1): the gradient flows through the minimising member only
        actor_loss = (ent_coef * log_prob_pi - min_q).mean()
        grad_a = self._min_q_action_grad(cache, member.squeeze(1), -1.0 / n)  # dL/da~ via min_i Q_i, (B, A)
        # + alpha/B d/da~ [-log(1 - a~^2 + 1e-6)], then through tanh and a Gaussian sample u = mean + std eps
        grad_a += (2.0 / n) * ent_coef * actions_pi / (1.0 + 1e-6 - actions_pi.square())
        grad_u = grad_a * (1.0 - actions_pi.square())
        log_std_pi = log_std[:n]
        grad_log_std = (grad_u * eps[:n] * log_std_c[:n].exp() - ent_coef / n) * (
            (log_std_pi >= cfg.log_std_min) & (log_std_pi <= cfg.log_std_max)
        )  # clamp passes gradients inside [min, max] only
        grad_out = torch.cat([grad_u, grad_log_std], 1)
        mlp_backward(self._actor_layers, actor_cache, grad_out, act, False, self._actor_grad_layers, rows=n)
        self._actor_flat.param.grad = self._actor_grad
        _adam_step(self.actor_optimizer)
        return torch.stack([actor_loss, critic_loss, ent_coef_loss, ent_coef])

    def _min_q_action_grad(self, cache: Cache, member: torch.Tensor, scale: float) -> torch.Tensor:
        """``scale * d Q_member(b)(s_b, a_b) / d a_b`` (B, A) from a stacked critic forward's ``cache``.

        Row ``b`` back-propagates through its minimising member only, so each member's backward runs on
        its own rows: half the work of back-propagating the masked gradient through all members.
        """
        grad_a = torch.empty(member.shape[0], self.act_dim)
        last = len(cache) - 1  # the output layer's activations are not needed
        for i, member_layers in enumerate(self._critic_member_layers):
            rows = (member == i).nonzero().squeeze(1)
            member_cache = cache[:]
            for layer, (h, z, y) in enumerate(cache[:last]):
                z_rows = z[i].index_select(0, rows)
                member_cache[layer] = (h, z_rows, z_rows if y is z else y[i].index_select(0, rows))
            grad_out = torch.full((rows.shape[0], 1), scale)
            grad_z = mlp_backward(member_layers, member_cache, grad_out, self._activation, stacked=False)
            grad_a[rows] = grad_z @ member_layers[0][0][:, self._obs_dim :]
        return grad_a

    def _train_step_autograd(self) -> torch.Tensor:
        """The update with autograd through the modules (used for bfloat16 autocast; the reference)."""
        cfg = self.config
        batch = self.replay_buffer.sample(cfg.batch_size)
        mean, log_std = self.actor(batch.observations)
        actions_pi, log_prob = squashed_sample(
            mean, log_std.clamp(cfg.log_std_min, cfg.log_std_max), self._generator
        )

        ent_coef_loss = torch.zeros(())
        if self.ent_coef_optimizer is not None:
            ent_coef_loss = -(self.log_ent_coef * (log_prob.detach() + self.target_entropy)).mean()
            self.ent_coef_optimizer.zero_grad(set_to_none=True)
            ent_coef_loss.backward()
            self.ent_coef_optimizer.step()
        ent_coef = self.log_ent_coef.detach().exp()

        with torch.no_grad():
            next_mean, next_log_std = self.actor(batch.next_observations)
            next_actions, next_log_prob = squashed_sample(
                next_mean, next_log_std.clamp(cfg.log_std_min, cfg.log_std_max), self._generator
            )
            next_q = self.critic_target(batch.next_observations, next_actions).min(dim=0).values
            target_q = batch.rewards + (1.0 - batch.terminated) * cfg.gamma * (
                next_q - ent_coef * next_log_prob
            )
        current_q = self.critic(batch.observations, batch.actions)
        critic_loss = 0.5 * (current_q - target_q).square().mean(dim=(1, 2)).sum()
        _autograd_step(critic_loss, self._critic_flat, self.critic_optimizer)

        self.critic.requires_grad_(False)  # actor step: gradients flow through Q to a~ only
        min_q_pi = self.critic(batch.observations, actions_pi).min(dim=0).values
        actor_loss = (ent_coef * log_prob - min_q_pi).mean()
        _autograd_step(actor_loss, self._actor_flat, self.actor_optimizer)
        self.critic.requires_grad_(True)
        return torch.stack([actor_loss, critic_loss, ent_coef_loss, ent_coef[0]]).detach()

    # --- persistence -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a checkpoint folder (weights, optimizer states, config, spaces); not the replay buffer."""
        optimizers = {
            "actor": self.actor_optimizer.state_dict(),
            "critic": self.critic_optimizer.state_dict(),
        }
        if self.ent_coef_optimizer is not None:
            optimizers["ent_coef"] = self.ent_coef_optimizer.state_dict()
        save_checkpoint(
            path,
            weights={
                "actor": self.actor.state_dict(),
                "critic": self.critic.state_dict(),
                "critic_target": self.critic_target.state_dict(),
                "ent_coef": {"log_ent_coef": self.log_ent_coef.detach()},
            },
            states={"optimizers": optimizers},
            config=self.config.to_dict(),
            metadata={
                "algorithm": self.algorithm,
                **checkpoint_metadata(self),
                "sac_format": CHECKPOINT_FORMAT,
                "n_updates": self._n_updates,
                "observation_space": space_to_dict(self.observation_space),
                "action_space": space_to_dict(self.action_space),
            },
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str], env: gymnasium.Env | str | None = None, **kwargs: Any) -> SAC:
        """Load a checkpoint written by :meth:`save` (also by builds before the shared contract);
        ``env`` is needed only to keep training, and must have the checkpoint's spaces."""
        ckpt = load_checkpoint(path, expected_algorithm=cls.algorithm)
        found = ckpt.metadata.get("sac_format", 1)
        if found != CHECKPOINT_FORMAT:
            raise CheckpointError(
                f"checkpoint {path} has SAC format {found}, this version reads format {CHECKPOINT_FORMAT} "
                "(optimizer states are now one flat tensor per network); retrain and re-save it"
            )
        try:
            obs_space = _space_from_metadata(ckpt.metadata["observation_space"])
            act_space = _space_from_metadata(ckpt.metadata["action_space"])
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise CheckpointError(
                f"checkpoint {path} has no readable space description ({exc}); re-save it"
            ) from exc
        model = cls(
            "MlpPolicy", env, observation_space=obs_space, action_space=act_space, **kwargs, **ckpt.config
        )
        check_same_space(obs_space, model.observation_space, "observation")
        check_same_space(act_space, model.action_space, "action")
        model.actor.load_state_dict(ckpt.weights["actor"])
        model.critic.load_state_dict(ckpt.weights["critic"])
        model.critic_target.load_state_dict(ckpt.weights["critic_target"])
        with torch.no_grad():
            model.log_ent_coef.copy_(ckpt.weights["ent_coef"]["log_ent_coef"])
        optimizers = ckpt.states.get("optimizers", {})
        model.actor_optimizer.load_state_dict(optimizers["actor"])
        model.critic_optimizer.load_state_dict(optimizers["critic"])
        if model.ent_coef_optimizer is not None and "ent_coef" in optimizers:
            model.ent_coef_optimizer.load_state_dict(optimizers["ent_coef"])
        model.num_timesteps = timesteps_from_metadata(ckpt.metadata)
        model._n_updates = int(ckpt.metadata.get("n_updates", 0))
        return model


_fused_adam_kernel: Callable[..., Any] | None = getattr(torch, "_fused_adam_", None)
"""torch's private fused Adam op (what ``Adam(fused=True).step()`` runs), or None where torch lacks it."""


def _adam_step(optimizer: torch.optim.Adam) -> None:
    """``optimizer.step()`` for a fused Adam over one tensor (under ``no_grad``), calling the fused
    kernel directly: the same update and state, without ``torch.optim``'s per-call Python overhead.

    The kernel is private to torch: where it is missing or its signature changed, this falls back to
    ``optimizer.step()`` for the rest of the process (same maths, tested by tests/rl/test_contract.py).
    """
    global _fused_adam_kernel
    group = optimizer.param_groups[0]
    (param,) = group["params"]
    state = optimizer.state[param]
    if not state or _fused_adam_kernel is None:  # the first step creates the state
        optimizer.step()
        return
    beta1, beta2 = group["betas"]
    state["step"] += 1
    try:
        _fused_adam_kernel(
            [param], [param.grad], [state["exp_avg"]], [state["exp_avg_sq"]], [], [state["step"]],
            amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
            eps=group["eps"], maximize=False,
        )  # fmt: skip
    except TypeError:  # another torch's signature: nothing was updated; use the public step from now on
        state["step"] -= 1
        _fused_adam_kernel = None
        optimizer.step()


def _autograd_step(loss: torch.Tensor, flat: FlatParameters, optimizer: torch.optim.Optimizer) -> None:
    """Back-propagate ``loss`` into ``flat``'s module, collect the flat gradient and step ``optimizer``."""
    for p in flat.params:
        p.grad = None
    loss.backward()
    flat.param.grad = flat.gather({p: p.grad for p in flat.params})
    optimizer.step()


def _grad_buffer(
    flat: FlatParameters, layers: list[tuple[torch.Tensor, torch.Tensor]]
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """A flat gradient tensor shaped like ``flat.param`` and, per layer, views of it matching ``layers``."""
    buffer = torch.zeros_like(flat.param.detach())

    def view(p: torch.Tensor) -> torch.Tensor:
        return buffer.as_strided(p.shape, p.stride(), p.storage_offset())

    return buffer, [(view(w), view(b)) for w, b in layers]


def _check_spaces(observation_space: gymnasium.Space, action_space: gymnasium.Space) -> None:
    if not isinstance(observation_space, (spaces.Box, spaces.Discrete)):
        raise EnvMismatchError(
            f"SAC needs a Box or Discrete observation space (as PPO), got {observation_space}; "
            "wrap the env in gymnasium.wrappers.FlattenObservation"
        )
    if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
        raise EnvMismatchError(f"SAC needs a 1-D Box action space, got {action_space}")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise EnvMismatchError(f"SAC needs bounded actions, got {action_space}; give the Box finite bounds")


def _space_from_metadata(data: dict[str, Any]) -> spaces.Space:
    """A space from ``rl.spaces.space_to_dict``, or from the ``{low, high, shape}`` Box description that
    checkpoints of builds before the shared contract hold."""
    if "type" in data:
        return space_from_dict(data)
    shape = tuple(data["shape"])
    return spaces.Box(np.array(data["low"], np.float32).reshape(shape),
                      np.array(data["high"], np.float32).reshape(shape), dtype=np.float32)  # fmt: skip
