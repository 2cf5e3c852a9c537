"""Proximal Policy Optimization (Schulman et al. 2017, "Proximal Policy Optimization Algorithms").

Reads top to bottom: the config, then ``PPO`` with its rollout (collect ``n_steps`` x ``n_envs``
transitions, bootstrap time-limit truncations, GAE) and its update (``n_epochs`` passes of shuffled
minibatches minimising the clipped surrogate)::

    rho_t      = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t))                  (probability ratio)
    L^CLIP     = -mean(min(rho_t * A_t, clip(rho_t, 1 - eps, 1 + eps) * A_t))  (policy_loss)
    L^VF       = mean((V(s_t) - R_t)^2)      V optionally clipped around V_old   (value_loss)
    L^S        = -mean(entropy)                                                   (entropy_loss)
    loss       = L^CLIP + ent_coef * L^S + vf_coef * L^VF

with advantages normalised per minibatch, global grad-norm clipping, and an optional early stop of
the epochs when ``approx_kl = mean((rho - 1) - log rho) > 1.5 * target_kl``. These details match
Stable-Baselines3's PPO, so the same hyperparameters give the same behaviour (see docs/ppo.md).

Speed (on small networks PPO's time is per-operation overhead; docs/ppo.md has the profile): the
update shuffles all transitions with one gather per epoch and slices minibatches as views;
advantage normalisation for all minibatches is one vectorised op per epoch; the network
(``policies.ActorCritic``) and the loss (:class:`PPOLoss`) are each one autograd node with the
gradient written out, and all weights live in one flat tensor, so fused Adam, the grad-norm clip
and zeroing each touch one tensor; rollouts draw their sampling noise once per rollout and run
under ``torch.inference_mode``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch

from resonance_os.rl.buffers import RolloutBuffer
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
from resonance_os.rl.logger import MetricsLogger
from resonance_os.rl.normalization import Normalizer
from resonance_os.rl.policies import ActorCritic, make_actor_critic
from resonance_os.rl.spaces import (
    as_observation,
    check_same_space,
    flat_obs_dim,
    flatten_obs,
    space_from_dict,
    space_to_dict,
)
from resonance_os.rl.vec_env import as_vector_env

Schedule = Callable[[float], float]
"""A learning-rate schedule: ``progress_remaining`` (1 at the start of ``learn``, 0 at the end) -> rate."""


@dataclass
class PPOConfig(JsonConfig):
    """PPO hyperparameters. Defaults are the ResonanceOS spec's training configuration (n_epochs as SB3).

    Attributes:
        learning_rate: Adam step size (initial value of the schedule). 3e-4.
        lr_schedule: ``"constant"`` or ``"linear"`` (decays to 0 at the end of ``learn``); ``"custom"``
            is set when a callable was passed as ``learning_rate`` (not stored in checkpoints).
        n_steps: steps per environment per rollout. 2048.
        batch_size: minibatch size. 64.
        n_epochs: passes over each rollout. 10.
        gamma: discount. 0.99.   gae_lambda: GAE lambda. 0.95.
        clip_range: surrogate clipping epsilon. 0.2.
        clip_range_vf: clip the value prediction to ``V_old +- clip_range_vf``; None disables. None.
        normalize_advantage: per-minibatch advantage normalisation. True.
        ent_coef: entropy bonus weight. 0.01.   vf_coef: value loss weight. 0.5.
        max_grad_norm: global gradient-norm clip. 0.5.
        target_kl: stop the epochs early when approx_kl > 1.5 * target_kl; None disables. None.
        n_envs: copies of the env when ``env`` is an id. 1.
        normalize_obs / normalize_reward: running normalisation (like VecNormalize). False / False.
        clip_obs / clip_reward: clipping after normalisation. 10.0 / 10.0.
        adam_eps: Adam epsilon (SB3 uses 1e-5). 1e-5.
        seed: seeds weights, sampling, shuffling and the first env reset (never torch's global RNG);
            None draws one.
        policy_kwargs: network options (``net_arch``, ``activation``, ``share_features_extractor``,
            ``squash_output``, ``log_std_init``, ``ortho_init``), see ``resonance_os.rl.policies``.
    """

    config_name: ClassVar[str] = "PPO"

    learning_rate: float = 3e-4
    lr_schedule: str = "constant"
    n_steps: int = 2048
    batch_size: int = 64
    n_epochs: int = 10
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    clip_range_vf: float | None = None
    normalize_advantage: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    n_envs: int = 1
    normalize_obs: bool = False
    normalize_reward: bool = False
    clip_obs: float = 10.0
    clip_reward: float = 10.0
    adam_eps: float = 1e-5
    seed: int | None = None
    policy_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        positive = ("learning_rate", "n_steps", "batch_size", "n_epochs", "clip_range", "n_envs", "adam_eps")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ConfigError(f"PPOConfig.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"PPOConfig.{name} must be in [0, 1], got {getattr(self, name)!r}")
        if self.lr_schedule not in ("constant", "linear", "custom"):
            raise ConfigError(
                f"PPOConfig.lr_schedule must be 'constant' or 'linear', got {self.lr_schedule!r}"
            )
        if self.max_grad_norm <= 0 or self.ent_coef < 0 or self.vf_coef < 0:
            raise ConfigError("PPOConfig needs max_grad_norm > 0, ent_coef >= 0 and vf_coef >= 0")
        for name in ("clip_range_vf", "target_kl"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"PPOConfig.{name} must be > 0 or None, got {value!r}")

    def fast(self) -> PPOConfig:
        """The fast preset: the same rollouts, minibatches 4x larger (capped at the rollout size).

        Each rollout then takes 4x fewer gradient steps, and on small networks PPO's time goes into
        the per-step overhead, not the arithmetic; on Pendulum-v1 with the rl-zoo settings it reaches
        the return of the tuned settings in a fraction of the time (docs/ppo.md has the figures).
        """
        return replace(self, batch_size=min(self.n_steps * self.n_envs, self.batch_size * 4))


class PPOLoss(torch.autograd.Function):
    """The PPO loss of one minibatch as a single autograd node with its gradient written out.

    ``apply(dist_params, log_std, values, policy, actions, old_log_probs, advantages, returns,
    old_values, config) -> (loss, (L^CLIP, L^S, L^VF), log_probs)``; only ``loss`` is differentiable.
    ``dist_params`` is the Gaussian mean or the logits ``(B, A)``, ``log_std`` the Gaussian's ``(A,)``
    (empty for Discrete), ``values`` ``(B,)``; ``advantages`` are already normalised.

    Gradients (B = minibatch size, m = [A rho <= A clip(rho)], the samples whose unclipped term is
    the minimum, which are the ones that pass gradient through the ratio):

        dloss/dlog pi   = -A * rho * m / B
        Gaussian:  dlog pi/dmu = z / sigma,  dlog pi/dlog sigma = z^2 - 1,  z = (a - mu) / sigma,
                   dL^S/dlog sigma = -1 per dimension
        Categorical: dlog pi/dlogits = onehot(a) - p,  dL^S/dlogits = p * (log p + H) / B
        dL^VF/dV    = 2 (V' - R) / B * [|V - V_old| <= clip_range_vf]   (V' the possibly clipped value)

    This equals what autograd computes through the same formulas (tests check it) at a fraction of
    autograd's per-operation cost, which dominates on small networks.
    """

    @staticmethod
    def forward(
        ctx: Any,
        dist_params: torch.Tensor,
        log_std: torch.Tensor,
        values: torch.Tensor,
        policy: ActorCritic,
        actions: torch.Tensor,
        old_log_probs: torch.Tensor,
        advantages: torch.Tensor,
        returns: torch.Tensor,
        old_values: torch.Tensor,
        cfg: PPOConfig,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        log_probs, mean_entropy = policy.log_prob_entropy(dist_params, log_std, actions)
        ratio = torch.exp(log_probs - old_log_probs)
        surrogate = advantages * ratio
        clipped = advantages * ratio.clamp(1.0 - cfg.clip_range, 1.0 + cfg.clip_range)
        unclipped_is_min = surrogate <= clipped
        policy_loss = -torch.minimum(surrogate, clipped).mean()  # L^CLIP
        value_mask = None
        if cfg.clip_range_vf is not None:
            delta = values - old_values
            value_mask = delta.abs() <= cfg.clip_range_vf
            values = old_values + delta.clamp(-cfg.clip_range_vf, cfg.clip_range_vf)
        value_error = values - returns
        value_loss = value_error.square().mean()  # L^VF
        entropy_loss = -mean_entropy  # L^S
        stacked = torch.stack((policy_loss, entropy_loss, value_loss))
        loss = policy_loss + cfg.ent_coef * entropy_loss + cfg.vf_coef * value_loss
        ctx.policy, ctx.cfg = policy, cfg
        ctx.save_for_backward(
            dist_params, log_std, actions, advantages, ratio, unclipped_is_min, value_error, value_mask
        )
        ctx.mark_non_differentiable(stacked, log_probs)
        return loss, stacked, log_probs

    @staticmethod
    def backward(ctx: Any, grad_loss: torch.Tensor, *_: Any) -> tuple[torch.Tensor | None, ...]:
        dist_params, log_std, actions, advantages, ratio, unclipped_is_min, value_error, value_mask = (
            ctx.saved_tensors
        )
        cfg, policy, n = ctx.cfg, ctx.policy, len(ratio)
        grad_log_probs = (advantages * ratio * unclipped_is_min) * (-grad_loss / n)
        grad_log_std = None
        if policy.continuous:
            inv_std = torch.exp(-log_std)
            z = (actions - dist_params) * inv_std
            grad_params = grad_log_probs.unsqueeze(1) * z * inv_std
            grad_log_std = (grad_log_probs.unsqueeze(1) * (z.square() - 1.0)).sum(
                0
            ) - grad_loss * cfg.ent_coef
        else:
            log_p = torch.log_softmax(dist_params, -1)
            p = log_p.exp()
            entropy = -(p * log_p).sum(-1, keepdim=True)
            onehot = torch.zeros_like(p).scatter_(1, actions.long(), 1.0)
            grad_params = grad_log_probs.unsqueeze(1) * (onehot - p) + (grad_loss * cfg.ent_coef / n) * p * (
                log_p + entropy
            )
        grad_values = value_error * (2.0 * cfg.vf_coef / n) * grad_loss
        if value_mask is not None:
            grad_values = grad_values * value_mask
        return grad_params, grad_log_std, grad_values, None, None, None, None, None, None, None


class PPO:
    """PPO on a gymnasium env (id, ``Env`` or same-step-autoreset vector env), Box or Discrete actions.

    Args:
        policy: ``"MlpPolicy"`` (the architecture comes from ``policy_kwargs``).
        env: an env id, a ``gymnasium.Env``, or a ``gymnasium.vector.VectorEnv``.
        log_dir: folder for ``metrics.jsonl`` (and TensorBoard); every row is also kept in ``self.history``.
        tensorboard: also write TensorBoard scalars.
        learning_rate: a float, or a callable schedule ``progress_remaining -> rate``.
        **config: any :class:`PPOConfig` field.
    """

    def __init__(
        self,
        policy: str,
        env: str | gym.Env | gym.vector.VectorEnv,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
        learning_rate: float | Schedule = 3e-4,
        **config: Any,
    ) -> None:
        if policy != "MlpPolicy":
            raise ConfigError(f"policy {policy!r} is not available; use 'MlpPolicy' and set policy_kwargs")
        self._lr_fn = learning_rate if callable(learning_rate) else None
        if self._lr_fn is not None:
            config.update(learning_rate=float(self._lr_fn(1.0)), lr_schedule="custom")
        else:
            config["learning_rate"] = learning_rate
        self.config = PPOConfig.from_dict(config)
        self.log_dir, self.tensorboard = log_dir, tensorboard
        self.env = as_vector_env(env, self.config.n_envs)
        self._setup(self.env.single_observation_space, self.env.single_action_space, self.env.num_envs)

    def _setup(self, observation_space: gym.Space, action_space: gym.Space, n_envs: int) -> None:
        cfg = self.config
        self.observation_space, self.action_space, self.n_envs = observation_space, action_space, n_envs
        seed = draw_seed(cfg.seed)
        self._rng = torch.Generator().manual_seed(seed)
        self._reset_seed: int | None = seed
        self.obs_dim = flat_obs_dim(observation_space)
        with seeded_torch(seed):  # nn.Linear's default init draws from the global RNG: fork it
            self.policy: ActorCritic = make_actor_critic(
                self.obs_dim, action_space, cfg.policy_kwargs, self._rng
            )
        self.optimizer = torch.optim.Adam(
            [self.policy.flat.param], lr=cfg.learning_rate, eps=cfg.adam_eps, fused=True
        )
        self.normalizer = Normalizer(
            (self.obs_dim,),
            n_envs,
            normalize_obs=cfg.normalize_obs,
            normalize_reward=cfg.normalize_reward,
            gamma=cfg.gamma,
            clip_obs=cfg.clip_obs,
            clip_reward=cfg.clip_reward,
        )
        action_dim = self.policy.action_dim if self.policy.continuous else 1
        self.buffer = RolloutBuffer(cfg.n_steps, n_envs, self.obs_dim, action_dim)
        self.num_timesteps = 0
        self.history: list[dict[str, Any]] = []
        self._last_obs: np.ndarray | None = None
        self._episode_returns = np.zeros(n_envs)
        self._episode_window: deque[float] = deque(maxlen=100)
        if self.policy.continuous:
            self._low, self._high = action_space.low, action_space.high

    # ------------------------------------------------------------------ learning
    def learn(
        self,
        total_timesteps: int,
        callback: Callback | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> PPO:
        """Train for ``total_timesteps`` env steps (rounded up to whole rollouts); returns ``self``.

        ``callback(model, metrics)`` runs after every update with the row just appended to
        ``self.history``; returning ``False`` stops training (``resonance_os.rl.contract``).
        With ``reset_num_timesteps=False`` the step counter (and the env state) continue from the
        previous call or the loaded checkpoint, so schedules and logs resume where they stopped.
        """
        if self.env is None:
            raise ConfigError("this model has no env; pass env= to PPO.load to train it")
        if self.config.lr_schedule == "custom" and self._lr_fn is None:
            raise ConfigError(
                "the model was trained with a callable learning_rate; pass learning_rate= to PPO.load"
            )
        callback = as_callback(callback, "PPO")
        if reset_num_timesteps:
            self.num_timesteps, self._last_obs = 0, None
        start_steps, target = self.num_timesteps, self.num_timesteps + int(total_timesteps)
        logger = MetricsLogger(
            self.log_dir,
            tensorboard=self.tensorboard,
            progress_bar=progress_bar,
            total_timesteps=target,
            description="PPO",
        )
        start_time = time.perf_counter()
        try:
            if self._last_obs is None:
                obs, _ = self.env.reset(seed=self._reset_seed)
                self._reset_seed = None
                self._last_obs = self._observe(obs, update=True)
                self._episode_returns[:] = 0.0
            while self.num_timesteps < target:
                self._collect_rollout()
                progress_remaining = 1.0 - (self.num_timesteps - start_steps) / (target - start_steps)
                metrics = self._update(self._learning_rate(progress_remaining))
                elapsed = time.perf_counter() - start_time
                metrics["fps"] = (self.num_timesteps - start_steps) / max(elapsed, 1e-9)
                row = logger.record(metrics, self.num_timesteps)
                self.history.append(row)
                if callback is not None and callback(self, row) is False:
                    break
        finally:
            logger.close()
        return self

    def _learning_rate(self, progress_remaining: float) -> float:
        if self._lr_fn is not None:
            return float(self._lr_fn(progress_remaining))
        if self.config.lr_schedule == "linear":
            return self.config.learning_rate * progress_remaining
        return self.config.learning_rate

    def _observe(self, obs: np.ndarray, update: bool) -> np.ndarray:
        """Raw env observations -> flat, normalised float32 ``(n, obs_dim)``."""
        return self.normalizer.obs(flatten_obs(self.observation_space, obs), update=update)

    def _collect_rollout(self) -> None:
        """Fill the buffer with ``n_steps`` steps of every env, then compute log-probs, GAE advantages and returns.

        The sampling noise of the whole rollout is drawn at once and the log-probs of the taken actions
        are computed in one vectorised call afterwards, so a step costs one forward pass and one env step.
        """
        cfg, buf, policy = self.config, self.buffer, self.policy
        buf.reset()
        obs = self._last_obs
        noise = policy.sample_noise((cfg.n_steps, self.n_envs), self._rng)
        dist_params = torch.empty(cfg.n_steps, self.n_envs, policy.action_dim)
        with torch.inference_mode():
            for t in range(cfg.n_steps):
                params, values, log_std = policy(torch.from_numpy(obs))
                actions = policy.act(params, log_std, noise[t])
                dist_params[t] = params
                actions_np = actions.numpy()
                if policy.continuous:  # the env gets the clipped action; the buffer keeps the sample
                    env_actions = np.clip(actions_np, self._low, self._high)
                else:
                    env_actions = actions_np[:, 0].astype(np.int64)
                next_obs, rewards, terminated, truncated, info = self.env.step(env_actions)
                self._check_finite(next_obs, rewards)
                dones = terminated | truncated
                self._track_episodes(rewards, dones)
                scaled = self.normalizer.reward(rewards, dones)
                cut = truncated & ~terminated
                if cut.any():  # time limit: bootstrap with the value of the state the episode was cut at
                    final = self._observe(np.stack(info["final_obs"][cut]), update=False)
                    scaled = scaled.copy()
                    scaled[cut] += cfg.gamma * policy.value(torch.from_numpy(final)).numpy()
                buf.add(obs, actions_np, scaled, dones, values.numpy())
                obs = self._observe(next_obs, update=True)
            last_values = policy.value(torch.from_numpy(obs)).numpy()
            log_probs, _ = policy.log_prob_entropy(
                dist_params.view(-1, policy.action_dim),
                log_std,
                torch.from_numpy(buf.actions).view(-1, buf.action_dim),
            )
        buf.log_probs[:] = log_probs.view(cfg.n_steps, self.n_envs).numpy()
        buf.compute_returns_and_advantage(last_values, cfg.gamma, cfg.gae_lambda)
        self._last_obs = obs
        self.num_timesteps += cfg.n_steps * self.n_envs

    def _check_finite(self, obs: np.ndarray, rewards: np.ndarray) -> None:
        if not np.isfinite(rewards).all():
            raise EnvMismatchError(
                f"the environment returned a non-finite reward {rewards.tolist()} at timestep "
                f"{self.num_timesteps}; fix the env's reward (NaN/inf cannot be learned from)"
            )
        if np.issubdtype(np.asarray(obs).dtype, np.floating) and not np.isfinite(obs).all():
            raise EnvMismatchError(
                f"the environment returned a non-finite observation at timestep {self.num_timesteps}; "
                "fix the env's observation (NaN/inf reach the network)"
            )

    def _track_episodes(self, rewards: np.ndarray, dones: np.ndarray) -> None:
        self._episode_returns += rewards
        for i in np.flatnonzero(dones):
            self._episode_window.append(float(self._episode_returns[i]))
            self._episode_returns[i] = 0.0

    def _update(self, learning_rate: float) -> dict[str, float]:
        """``n_epochs`` passes of clipped-surrogate minibatch SGD over the buffer; returns the update's metrics."""
        cfg, policy, optimizer = self.config, self.policy, self.optimizer
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        data = self.buffer.packed()
        n, o, a = len(data), self.obs_dim, self.buffer.action_dim
        flat_params = policy.flat  # all weights in one tensor: one Adam update, one norm, one zeroing
        terms: list[torch.Tensor] = []
        continue_training = True
        for _ in range(cfg.n_epochs):
            shuffled = data[torch.randperm(n, generator=self._rng)]  # one gather; minibatches are views
            obs, actions = shuffled[:, :o], shuffled[:, o : o + a]
            old_log_probs, advantages = shuffled[:, o + a], shuffled[:, o + a + 1]
            returns, old_values = shuffled[:, o + a + 2], shuffled[:, o + a + 3]
            if cfg.normalize_advantage:
                advantages = normalize_per_minibatch(advantages, cfg.batch_size)
            new_log_probs = torch.empty(n)
            done_rows = 0
            minibatches = zip(
                *(
                    t.split(cfg.batch_size)
                    for t in (obs, actions, old_log_probs, advantages, returns, old_values)
                )
            )
            for mb_obs, mb_actions, mb_old_log_probs, mb_adv, mb_returns, mb_old_values in minibatches:
                dist_params, values, log_std = policy(mb_obs)
                loss, stacked, log_probs = PPOLoss.apply(
                    dist_params,
                    log_std,
                    values,
                    policy,
                    mb_actions,
                    mb_old_log_probs,
                    mb_adv,
                    mb_returns,
                    mb_old_values,
                    cfg,
                )
                if cfg.target_kl is not None:
                    log_ratio = log_probs - mb_old_log_probs
                    approx_kl = ((log_ratio.exp() - 1.0) - log_ratio).mean().item()
                    if approx_kl > 1.5 * cfg.target_kl:
                        continue_training = False
                        break
                flat_params.zero_grad()
                loss.backward()
                flat_params.clip_grad_norm_(cfg.max_grad_norm)
                optimizer.step()
                terms.append(stacked)
                new_log_probs[done_rows : done_rows + len(log_probs)] = log_probs
                done_rows += len(log_probs)
            if not continue_training:
                break
        return self._update_metrics(
            terms, new_log_probs[:done_rows], old_log_probs[:done_rows], learning_rate
        )

    def _update_metrics(
        self,
        terms: list[torch.Tensor],
        new_log_probs: torch.Tensor,
        old_log_probs: torch.Tensor,
        learning_rate: float,
    ) -> dict[str, float]:
        """The spec's metrics for one update; ratio statistics are over the last epoch's minibatches."""
        cfg = self.config
        with torch.no_grad():
            log_ratio = new_log_probs - old_log_probs
            ratio = log_ratio.exp()
            clip_fraction = (
                ((ratio - 1.0).abs() > cfg.clip_range).float().mean().item() if len(ratio) else math.nan
            )
            approx_kl = ((ratio - 1.0) - log_ratio).mean().item() if len(ratio) else math.nan
            policy_loss, entropy_loss, value_loss = (
                torch.stack(terms).mean(0).tolist() if terms else (math.nan, math.nan, math.nan)
            )
        values, returns = self.buffer.values.ravel(), self.buffer.returns.ravel()
        var_returns = float(np.var(returns))
        explained = math.nan if var_returns == 0 else 1.0 - float(np.var(returns - values)) / var_returns
        episodes = np.asarray(self._episode_window, dtype=np.float64)
        return {
            "episode_reward_mean": float(episodes.mean()) if len(episodes) else math.nan,
            "episode_reward_std": float(episodes.std()) if len(episodes) else math.nan,
            "loss": policy_loss + cfg.ent_coef * entropy_loss + cfg.vf_coef * value_loss,
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy_loss": entropy_loss,
            "explained_variance": explained,
            "learning_rate": learning_rate,
            "approx_kl": approx_kl,
            "clip_fraction": clip_fraction,
        }

    # ------------------------------------------------------------------ acting
    def predict(
        self,
        observation: np.ndarray,
        state: Any = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, None]:
        """Action(s) for one observation or a batch ``(n, *obs_shape)``; returns ``(action, None)`` as SB3.

        Box actions are clipped to the bounds; Discrete actions are integers.
        """
        obs = as_observation(observation, self.observation_space)
        single = obs.shape == self.observation_space.shape
        batch = obs[None] if single else obs
        with torch.inference_mode():
            flat = self._observe(batch, update=False)
            if flat.shape[1] != self.obs_dim:
                raise EnvMismatchError(
                    f"observation of shape {obs.shape} does not fit the model's observation space {self.observation_space}"
                )
            params, _, log_std = self.policy(torch.from_numpy(flat))
            noise = None if deterministic else self.policy.sample_noise((len(flat),), self._rng)
            actions = self.policy.act(params, log_std, noise)
        out = actions.numpy()
        out = np.clip(out, self._low, self._high) if self.policy.continuous else out[:, 0].astype(np.int64)
        return (out[0] if single else out), None

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write an atomic, weights-only checkpoint folder (policy, optimizer, normaliser, RNG, config)."""
        save_checkpoint(
            path,
            weights={"policy": self.policy.state_dict()},
            config=json.loads(self.config.to_json()),
            metadata={
                "algorithm": "PPO",
                **checkpoint_metadata(self),
                "observation_space": space_to_dict(self.observation_space),
                "action_space": space_to_dict(self.action_space),
                "n_envs": self.n_envs,
            },
            states={
                "optimizer": self.optimizer.state_dict(),
                "normalizer": self.normalizer.state_dict(),
                "rng": {"torch": self._rng.get_state()},
            },
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        env: str | gym.Env | gym.vector.VectorEnv | None = None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        tensorboard: bool = False,
        learning_rate: Schedule | None = None,
    ) -> PPO:
        """Load a checkpoint written by :meth:`save`; with ``env`` the model can keep training.

        Raises ``CheckpointError`` for a missing/corrupt/foreign checkpoint and ``EnvMismatchError``
        when ``env``'s spaces differ from the model's.
        """
        ckpt = load_checkpoint(path, expected_algorithm="PPO")
        config = PPOConfig.from_dict(ckpt.config)
        try:
            obs_space = space_from_dict(ckpt.metadata["observation_space"])
            act_space = space_from_dict(ckpt.metadata["action_space"])
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise CheckpointError(
                f"checkpoint {path} has no readable space description ({exc}); re-save it"
            ) from exc
        model = cls.__new__(cls)
        model.config, model.log_dir, model.tensorboard = config, log_dir, tensorboard
        model._lr_fn = learning_rate
        model.env = None
        n_envs = int(ckpt.metadata.get("n_envs", 1))
        if env is not None:
            model.env = as_vector_env(env, n_envs if isinstance(env, str) else 1)
            check_same_space(obs_space, model.env.single_observation_space, "observation")
            check_same_space(act_space, model.env.single_action_space, "action")
            n_envs = model.env.num_envs
        model._setup(obs_space, act_space, n_envs)
        try:
            model.policy.load_state_dict(ckpt.weights["policy"])
            model.optimizer.load_state_dict(ckpt.states["optimizer"])
            model.normalizer.load_state_dict(ckpt.states["normalizer"])
            model._rng.set_state(ckpt.states["rng"]["torch"])
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            raise CheckpointError(
                f"checkpoint {path} does not fit a PPO model with its config: {exc}"
            ) from exc
        model.num_timesteps = timesteps_from_metadata(ckpt.metadata)
        model._reset_seed = None
        return model


def normalize_per_minibatch(advantages: torch.Tensor, batch_size: int) -> torch.Tensor:
    """``(A - mean) / (std + 1e-8)`` within each consecutive block of ``batch_size`` (unbiased std), in one op per
    block shape. A final block of one element is left as is (its std is undefined), as SB3 skips it."""
    n = len(advantages)
    full = (n // batch_size) * batch_size
    out = torch.empty_like(advantages)
    if full and batch_size > 1:
        blocks = advantages[:full].reshape(-1, batch_size)
        std, mean = torch.std_mean(blocks, dim=1, keepdim=True)
        out[:full] = ((blocks - mean) / (std + 1e-8)).view(-1)
    else:
        out[:full] = advantages[:full]
    rest = advantages[full:]
    if len(rest) > 1:
        std, mean = torch.std_mean(rest)
        out[full:] = (rest - mean) / (std + 1e-8)
    else:
        out[full:] = rest
    return out
