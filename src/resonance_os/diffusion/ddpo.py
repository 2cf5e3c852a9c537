"""DDPO (Black et al. 2023, "Training Diffusion Models with Reinforcement Learning") and its RWR baselines.

The denoising chain is a T-step MDP: state (x_t, t, label), action x_{t-1} drawn from the DDIM
policy pi_theta(x_{t-1} | x_t, label) (diffusion/ddim.py), reward r(x_0, label) only at the end.
Each epoch samples ``samples_per_epoch`` chains with their per-step log-probs, scores x_0, then:

- advantages  A = (r - mu_label) / sigma_label from the per-prompt stat tracker (batch statistics
  until a label has ``stat_min_count`` rewards), clipped to [-adv_clip_max, adv_clip_max].
- ``sf``  (DDPO_SF, score function / REINFORCE):  L = -E[ A * sum_t log pi_theta(x_{t-1} | x_t) ],
  one gradient step per epoch (on-policy; ``num_inner_epochs`` must be 1).
- ``is``  (DDPO_IS, importance sampling with PPO's clip): ratio rho_t = pi_theta / pi_old,
  L = E[ max(-A rho_t, -A clip(rho_t, 1 - eps, 1 + eps)) ], one step per minibatch of
  ``train_batch_size`` chains, ``num_inner_epochs`` passes over the batch (so later steps are
  off-policy and the clip matters).
- ``rwr`` (reward-weighted regression): the DDPM denoising loss on the samples, weighted by
  w = exp(z / beta) with z the batch-standardised reward, normalised to mean 1.
- ``sparse_rwr``: the denoising loss on the samples at or above the ``sparse_rwr_percentile``-th
  reward percentile only (weights 0/1).

Each chain trains on a random ``timestep_fraction`` of its steps (DDPO; RWR draws that many DDPM
timesteps), and gradients accumulate over those timesteps before the optimizer steps. DDPO only
draws steps whose policy std sigma_t is at least ``min_policy_std``: with 10 DDIM steps on the
linear schedule the last two are nearly deterministic (sigma_t 0.015 and 0.007, about one grey
level); their log-prob gradients measured 4-40x the other steps' (the log-density divides by
sigma_t^2), so after gradient-norm clipping and Adam they decided the update, while the noise they
add barely moves the reward.
DDPO is a trainer of the shared surface (``rl/contract.py``): ``learn(total_timesteps, callback,
progress_bar, reset_num_timesteps)`` counting sampled images, ``history``, ``num_timesteps``.
Metrics per epoch go to ``metrics.jsonl`` (rl/logger.py) against samples seen; checkpoints are
atomic folders (rl/checkpoint.py) in the run's ``checkpoint/`` (rl/run.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from resonance_os.diffusion.ddim import (
    Trajectory,
    ddim_timesteps,
    linear_alphas_cumprod,
    policy_std,
    sample_with_logprob,
    trajectory_log_prob,
)
from resonance_os.diffusion.grid import save_grid
from resonance_os.diffusion.pretrain import denoising_loss
from resonance_os.diffusion.rewards import RewardFn
from resonance_os.diffusion.stat_tracker import PerPromptStatTracker
from resonance_os.diffusion.unet import ConditionalUNet, UNetConfig
from resonance_os.rl.checkpoint import load_checkpoint, save_checkpoint
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import as_callback, checkpoint_metadata, timesteps_from_metadata
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.logger import MetricsLogger
from resonance_os.rl.run import CHECKPOINT_DIR

METHODS = ("is", "sf", "rwr", "sparse_rwr")
GRID_SEED = 1234


@dataclass
class DDPOConfig(JsonConfig):
    """DDPO / RWR hyperparameters (defaults sized for the 16x16 digits model on one CPU core)."""

    config_name = "DDPO"

    method: str = "is"
    """One of ``is`` (DDPO_IS), ``sf`` (DDPO_SF), ``rwr``, ``sparse_rwr``."""
    reward: str = "compressibility"
    num_steps: int = 10
    """DDIM steps per chain (the MDP's horizon)."""
    guidance_scale: float = 3.0
    eta: float = 1.0
    samples_per_epoch: int = 64
    train_batch_size: int = 32
    num_inner_epochs: int = 1
    timestep_fraction: float = 0.5
    min_policy_std: float = 0.05
    """DDPO trains only the denoising steps whose policy std sigma_t is at least this (0: all steps).

    With 10 DDIM steps on the linear schedule that leaves out the last two (sigma_t 0.015 and 0.007,
    about one grey level): their log-prob gradients are 4-40x the others' and drown them."""
    learning_rate: float = 1e-4
    max_grad_norm: float = 1.0
    clip_range: float = 1e-3
    """PPO clip on the ratio of per-step log-probs averaged over pixels. ddpo-pytorch's 1e-4 is for
    16,384-dimensional latents; a random mean shift moves a pixel-averaged log-prob by about
    1/sqrt(dims), 8x more on our 256 pixels. After one AdamW step at lr 1e-4 the median |log ratio|
    of the trained steps is 6-8e-4 (benchmarks/ddpo_step_gradients.py): 1e-4 takes 91-97% of the
    chains out of every later minibatch's gradient, 1e-3 23-44%."""
    adv_clip_max: float = 5.0
    per_prompt_stat_tracking: bool = True
    stat_buffer_size: int = 32
    stat_min_count: int = 16
    rwr_temperature: float = 1.0
    sparse_rwr_percentile: float = 75.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"unknown method {self.method!r}; choose one of {list(METHODS)}")
        if not 0.0 < self.timestep_fraction <= 1.0:
            raise ConfigError(f"timestep_fraction must be in (0, 1], got {self.timestep_fraction}")
        if self.samples_per_epoch < 2 or not 1 <= self.train_batch_size <= self.samples_per_epoch:
            raise ConfigError(
                f"need samples_per_epoch >= 2 and 1 <= train_batch_size <= samples_per_epoch (got "
                f"{self.samples_per_epoch} and {self.train_batch_size})"
            )
        if self.method == "sf" and self.num_inner_epochs != 1:
            raise ConfigError(
                f"DDPO_SF trains on each batch once (its gradient is only unbiased on-policy), got "
                f"num_inner_epochs={self.num_inner_epochs}; use method 'is' to reuse a batch"
            )
        if self.min_policy_std < 0.0:
            raise ConfigError(f"min_policy_std must be >= 0 (0 trains every step), got {self.min_policy_std}")
        if self.num_steps < 1 or self.eta <= 0.0:
            raise ConfigError(f"need num_steps >= 1 and eta > 0 (got {self.num_steps}, {self.eta})")
        if self.rwr_temperature <= 0.0 or not 0.0 <= self.sparse_rwr_percentile < 100.0:
            raise ConfigError("need rwr_temperature > 0 and 0 <= sparse_rwr_percentile < 100")


class DDPO:
    """Fine-tune a class-conditional DDPM on a reward, Stable-Baselines3 style.

    ``DDPO(unet, reward_fn, config, log_dir=...).learn(epochs)``; ``reward_fn(images, labels)``
    returns one float per sample (diffusion/rewards.py). The UNet is trained in place (full fine-tune).
    """

    def __init__(
        self,
        unet: ConditionalUNet,
        reward_fn: RewardFn,
        config: DDPOConfig | None = None,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        grid_every: int = 0,
        checkpoint_every: int = 0,
    ) -> None:
        self.config = config or DDPOConfig()
        self.unet = unet
        self.reward_fn = reward_fn
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.grid_every = grid_every
        self.checkpoint_every = checkpoint_every
        self.optimizer = torch.optim.AdamW(unet.parameters(), lr=self.config.learning_rate, weight_decay=0.0)
        self.stat_tracker = PerPromptStatTracker(self.config.stat_buffer_size, self.config.stat_min_count)
        self.alphas = linear_alphas_cumprod()
        self.trainable_steps = self._trainable_steps()
        self.epoch = 0
        self.num_timesteps = 0
        self.history: list[dict[str, Any]] = []
        self.logger = MetricsLogger(self.log_dir)

    def _trainable_steps(self) -> torch.Tensor:
        """Indices of the denoising steps DDPO trains on: those with sigma_t >= ``min_policy_std``."""
        cfg = self.config
        timesteps = ddim_timesteps(cfg.num_steps, self.alphas.shape[0])
        stds = policy_std(timesteps, self.alphas, cfg.num_steps, eta=cfg.eta).flatten()
        steps = torch.nonzero(stds >= cfg.min_policy_std).flatten()
        if steps.numel() == 0:
            raise ConfigError(
                f"min_policy_std {cfg.min_policy_std} leaves no denoising step to train (the largest "
                f"sigma_t is {stds.max().item():.3g}); lower it"
            )
        return steps

    # ----------------------------------------------------------------------------- sampling
    def sample(self, labels: torch.Tensor, *, seed: int) -> Trajectory:
        """Sample chains for ``labels`` with the current weights (a ``Trajectory``)."""
        cfg = self.config
        return sample_with_logprob(
            self.unet,
            labels,
            num_steps=cfg.num_steps,
            guidance_scale=cfg.guidance_scale,
            eta=cfg.eta,
            generator=torch.Generator().manual_seed(seed),
            alphas_cumprod=self.alphas,
        )

    # ----------------------------------------------------------------------------- training
    def learn(
        self,
        total_timesteps: int,
        /,
        callback: Callable[..., Any] | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> DDPO:
        """Sample -> reward -> update, one epoch of ``samples_per_epoch`` chains at a time, until
        ``total_timesteps`` more chains were sampled (``rl.contract``: DDPO's timesteps are sampled
        images; ``epochs * config.samples_per_epoch`` trains ``epochs`` epochs). ``callback(model,
        row)`` after each epoch (``False`` stops); rows go to ``self.history`` and ``metrics.jsonl``;
        the checkpoint goes to ``log_dir/checkpoint`` every ``checkpoint_every`` epochs and at the end.
        ``reset_num_timesteps`` restarts the count, not the sampling seeds (those follow ``epoch``)."""
        if isinstance(total_timesteps, bool) or not isinstance(total_timesteps, int) or total_timesteps < 1:
            raise ConfigError(f"total_timesteps={total_timesteps!r} must be a whole number of samples >= 1")
        callback = as_callback(callback, "DDPO")
        if reset_num_timesteps:
            self.num_timesteps = 0
        target = self.num_timesteps + total_timesteps
        self.logger.close()
        self.logger = MetricsLogger(
            self.log_dir, progress_bar=progress_bar, total_timesteps=target, description="DDPO"
        )
        if self.epoch == 0 and self.grid_every:
            self.save_grid()
        try:
            while self.num_timesteps < target:
                row = self._train_epoch()
                self.history.append(row)
                stop = callback is not None and callback(self, row) is False
                if self.grid_every and self.epoch % self.grid_every == 0:
                    self.save_grid()
                if self.checkpoint_every and self.epoch % self.checkpoint_every == 0:
                    self._save_to_run()
                if stop:
                    break
        finally:
            self.logger.close()
        self._save_to_run()
        return self

    def _save_to_run(self) -> None:
        if self.log_dir is not None:
            self.save(self.log_dir / CHECKPOINT_DIR)

    def _train_epoch(self) -> dict[str, Any]:
        cfg = self.config
        start = time.perf_counter()
        seed = cfg.seed * 1_000_003 + self.epoch
        generator = torch.Generator().manual_seed(seed)
        labels = torch.randint(0, self.unet.config.num_classes, (cfg.samples_per_epoch,), generator=generator)
        trajectory = self.sample(labels, seed=seed)
        rewards = np.asarray(self.reward_fn(trajectory.images, labels), dtype=np.float64)
        stats = self.update(trajectory, rewards, seed=seed)
        self.epoch += 1
        self.num_timesteps += cfg.samples_per_epoch
        metrics = {
            "episode_reward_mean": float(rewards.mean()),
            "episode_reward_std": float(rewards.std()),
            "epoch": float(self.epoch),
            "fps": cfg.samples_per_epoch / (time.perf_counter() - start),
            **stats,
        }
        return self.logger.record(metrics, self.num_timesteps)

    def update(self, trajectory: Trajectory, rewards: np.ndarray, *, seed: int = 0) -> dict[str, float]:
        """Train on scored chains (one reward per chain) with the configured method; return loss statistics."""
        generator = torch.Generator().manual_seed(seed)
        labels = trajectory.labels
        if self.config.method in ("is", "sf"):
            return self._policy_gradient_update(trajectory, self._advantages(labels, rewards), generator)
        return self._regression_update(trajectory.images, labels, self._rwr_weights(rewards), generator)

    def _advantages(self, labels: torch.Tensor, rewards: np.ndarray) -> torch.Tensor:
        cfg = self.config
        if cfg.per_prompt_stat_tracking:
            advantages = self.stat_tracker.update(labels.numpy(), rewards)
        else:
            advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        clipped = np.clip(advantages, -cfg.adv_clip_max, cfg.adv_clip_max)
        return torch.as_tensor(clipped, dtype=torch.float32)

    def _policy_gradient_update(
        self, trajectory: Trajectory, advantages: torch.Tensor, generator: torch.Generator
    ) -> dict:
        """DDPO_SF (one step per epoch) or DDPO_IS (one clipped step per minibatch)."""
        cfg = self.config
        count = advantages.shape[0]
        trainable = self.trainable_steps
        k = max(1, round(trainable.numel() * cfg.timestep_fraction))
        minibatches_per_step = 1 if cfg.method == "is" else -(-count // cfg.train_batch_size)
        losses, kls, clipped = [], [], []
        self.unet.train()
        for _ in range(cfg.num_inner_epochs):
            minibatches = torch.randperm(count, generator=generator).split(cfg.train_batch_size)
            self.optimizer.zero_grad()
            for number, rows in enumerate(minibatches, start=1):
                # timestep subsampling: each chain trains on its own random k of the trainable steps
                picks = torch.rand((rows.shape[0], trainable.numel()), generator=generator).argsort(dim=1)
                steps = trainable[picks[:, :k]]
                adv = advantages[rows]
                for j in range(k):
                    log_prob = trajectory_log_prob(
                        self.unet,
                        trajectory,
                        steps[:, j],
                        num_steps=cfg.num_steps,
                        guidance_scale=cfg.guidance_scale,
                        eta=cfg.eta,
                        alphas_cumprod=self.alphas,
                        index=rows,
                    )
                    old_log_prob = trajectory.log_probs[rows, steps[:, j]]
                    ratio = torch.exp(log_prob - old_log_prob)
                    if cfg.method == "is":
                        unclipped_loss = -adv * ratio
                        clipped_loss = -adv * torch.clamp(ratio, 1.0 - cfg.clip_range, 1.0 + cfg.clip_range)
                        loss = torch.maximum(unclipped_loss, clipped_loss).mean()
                    else:
                        loss = -(adv * log_prob).mean()
                    # gradient accumulation over timesteps (and, for SF, over minibatches)
                    (loss / (k * minibatches_per_step)).backward()
                    with torch.no_grad():
                        losses.append(loss.item())
                        kls.append(0.5 * ((log_prob - old_log_prob) ** 2).mean().item())
                        clipped.append(((ratio - 1.0).abs() > cfg.clip_range).float().mean().item())
                if number % minibatches_per_step == 0 or number == len(minibatches):
                    self._optimizer_step()
        self.unet.eval()
        return {
            "loss": float(np.mean(losses)),
            "approx_kl": float(np.mean(kls)),
            "clip_fraction": float(np.mean(clipped)),
        }

    def _rwr_weights(self, rewards: np.ndarray) -> torch.Tensor:
        cfg = self.config
        if cfg.method == "sparse_rwr":
            weights = (rewards >= np.percentile(rewards, cfg.sparse_rwr_percentile)).astype(np.float64)
        else:
            z = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
            weights = np.exp((z - z.max()) / cfg.rwr_temperature)
        return torch.as_tensor(weights / weights.mean(), dtype=torch.float32)

    def _regression_update(
        self, images: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor, generator: torch.Generator
    ) -> dict:
        """RWR / sparse RWR: the weighted DDPM denoising loss, one step per minibatch."""
        cfg = self.config
        keep = torch.nonzero(weights > 0).flatten()
        k = max(1, round(cfg.num_steps * cfg.timestep_fraction))
        losses = []
        self.unet.train()
        for _ in range(cfg.num_inner_epochs):
            for rows in keep[torch.randperm(keep.shape[0], generator=generator)].split(cfg.train_batch_size):
                self.optimizer.zero_grad()
                for _ in range(k):
                    per_sample = denoising_loss(
                        self.unet, images[rows], labels[rows], generator=generator, alphas_cumprod=self.alphas
                    )
                    loss = (weights[rows] * per_sample).mean()
                    (loss / k).backward()
                    losses.append(loss.item())
                self._optimizer_step()
        self.unet.eval()
        return {"loss": float(np.mean(losses))}

    def _optimizer_step(self) -> None:
        torch.nn.utils.clip_grad_norm_(self.unet.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad()

    # ----------------------------------------------------------------------------- outputs
    def save_grid(self) -> Path | None:
        """Write ``samples/epoch_XXXX.png``: two rows of the ten digits, same noise every time."""
        if self.log_dir is None:
            return None
        labels = torch.arange(20) % self.unet.config.num_classes
        images = self.sample(labels, seed=GRID_SEED).images
        return save_grid(images, self.log_dir / "samples" / f"epoch_{self.epoch:04d}.png")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Atomic checkpoint folder: UNet weights, optimizer and stat tracker, both configs."""
        return save_checkpoint(
            path,
            weights={"unet": self.unet.state_dict()},
            config={"ddpo": self.config.to_dict(), "unet": self.unet.config.to_dict()},
            states={"optimizer": self.optimizer.state_dict(), "stat_tracker": self.stat_tracker.state_dict()},
            metadata={"algorithm": "DDPO", "epoch": self.epoch, **checkpoint_metadata(self)},
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        reward_fn: RewardFn,
        *,
        log_dir: str | os.PathLike[str] | None = None,
        grid_every: int = 0,
        checkpoint_every: int = 0,
    ) -> DDPO:
        """Resume from a checkpoint folder written by :meth:`save` (epochs continue where they stopped)."""
        saved = load_checkpoint(path, expected_algorithm="DDPO")
        unet = ConditionalUNet(UNetConfig.from_dict(saved.config["unet"]))
        unet.load_state_dict(saved.weights["unet"])
        unet.eval()
        model = cls(
            unet,
            reward_fn,
            DDPOConfig.from_dict(saved.config["ddpo"]),
            log_dir=log_dir,
            grid_every=grid_every,
            checkpoint_every=checkpoint_every,
        )
        model.optimizer.load_state_dict(saved.states["optimizer"])
        model.stat_tracker.load_state_dict(saved.states["stat_tracker"])
        model.epoch = int(saved.metadata["epoch"])
        metadata = saved.metadata  # older builds called the count samples_seen
        model.num_timesteps = timesteps_from_metadata(
            {"num_timesteps": metadata.get("samples_seen", 0), **metadata}
        )
        return model

    def close(self) -> None:
        self.logger.close()
