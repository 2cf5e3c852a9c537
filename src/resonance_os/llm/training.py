"""What the LM trainers (``llm.grpo.GRPO``, ``llm.sft.SFT``) share: ``learn`` over their steps, their
config from the caller's arguments, the seeded streams, one optimiser step, and their checkpoints
(save, open, restore)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import torch

from resonance_os.llm.policy import CHECKPOINT_KIND, LMPolicy
from resonance_os.rl.checkpoint import Checkpoint, load_checkpoint
from resonance_os.rl.config import JsonConfig
from resonance_os.rl.contract import (
    Callback,
    checkpoint_metadata,
    draw_seed,
    learn_in_steps,
    timesteps_from_metadata,
)
from resonance_os.rl.errors import CheckpointError, ConfigError

ConfigT = TypeVar("ConfigT", bound=JsonConfig)


class StepTrainer:
    """The trainers' shared ``learn`` (``resonance_os.rl.contract``): a subclass names its ``algorithm``
    and defines ``_train_step(step) -> metrics``, one optimiser step's row of metrics."""

    algorithm: ClassVar[str]

    def _train_step(self, step: int) -> dict[str, float]:
        raise NotImplementedError

    def learn(
        self,
        steps: int,
        callback: Callback | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> Self:
        """Run ``steps`` optimiser steps; returns ``self``. ``callback(trainer, metrics)`` runs after
        every step (returning ``False`` stops); ``reset_num_timesteps=False`` continues the count
        (after ``load``: the resumed run)."""
        learn_in_steps(
            self,
            steps,
            self._train_step,
            callback=callback,
            progress_bar=progress_bar,
            reset_num_timesteps=reset_num_timesteps,
            algorithm=self.algorithm,
        )
        return self


def check_policy(policy: Any) -> None:
    """A trainer trains an ``LMPolicy``; anything else is a ConfigError naming what was passed."""
    if not isinstance(policy, LMPolicy):
        raise ConfigError(f"policy must be an LMPolicy, got {type(policy).__name__}")


def trainer_config(config_cls: type[ConfigT], config: Any, overrides: dict[str, Any]) -> ConfigT:
    """The trainer's config: ``config`` (None = the defaults, a dict of fields, or an instance) with
    the keyword ``overrides`` replacing fields, and a seed drawn once when None (kept, so a checkpoint
    resumes the same seeded streams)."""
    if config is None:
        config = config_cls()
    elif isinstance(config, dict):
        config = config_cls.from_dict(config)
    elif not isinstance(config, config_cls):
        raise ConfigError(
            f"config must be a {config_cls.__name__} or a dict of its fields, got {type(config).__name__}"
        )
    if overrides:
        config = config_cls.from_dict({**config.to_dict(), **overrides})
    if config.seed is None:
        config = replace(config, seed=draw_seed(None))
    return config


def stream_seed(seed: int, step: int, stream: int) -> int:
    """A seed for (step, purpose) of a run seeded with ``seed``: each trainer numbers its streams."""
    return (int(seed) * 1_000_003 + step * 7_919 + stream * 104_729) % (2**62)


def optimizer_step(
    optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float | None
) -> torch.Tensor:
    """Backward ``loss`` into fresh gradients, clip their global norm to ``max_grad_norm`` (None: no
    clipping) and step ``optimizer``; returns the norm before clipping."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    max_norm = max_grad_norm if max_grad_norm is not None else float("inf")
    grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    return grad_norm


def save_trainer(trainer: Any, path: str | os.PathLike[str], metadata: dict[str, Any]) -> Path:
    """One atomic checkpoint folder: the policy's weights (``LMPolicy.save``), the trainer's
    ``metadata`` (its kind, config, ...), the step count and the optimiser state."""
    return trainer.policy.save(
        path,
        metadata={**metadata, **checkpoint_metadata(trainer)},
        states={"optimizer": trainer.optimizer.state_dict()},
    )


def open_trainer_checkpoint(
    path: str | os.PathLike[str], policy: LMPolicy, kind: str, config_cls: type[ConfigT], config_key: str
) -> tuple[Checkpoint, ConfigT]:
    """Open a folder written by ``save_trainer`` for trainer ``kind`` and load its weights into
    ``policy``; returns the checkpoint and the trainer's config. A bare policy checkpoint, or another
    trainer's, is a CheckpointError naming the right loader."""
    ckpt = load_checkpoint(path, expected_algorithm=CHECKPOINT_KIND)
    if ckpt.metadata.get("trainer") != kind or config_key not in ckpt.metadata:
        raise CheckpointError(
            f"{path} is a policy checkpoint without {kind} trainer state; load it with LMPolicy.load, "
            f"or pass a folder written by {kind}.save"
        )
    check_policy(policy)
    config = config_cls.from_dict(ckpt.metadata[config_key])
    policy.load_trained_weights(ckpt, path)
    return ckpt, config


def restore_optimizer(trainer: Any, ckpt: Checkpoint, path: str | os.PathLike[str]) -> None:
    """Put the checkpoint's optimiser state and step count back into a freshly built ``trainer``."""
    try:
        trainer.optimizer.load_state_dict(ckpt.states["optimizer"])
    except (KeyError, RuntimeError, ValueError) as exc:
        raise CheckpointError(f"the optimiser state in {path} does not fit this policy: {exc}") from exc
    trainer.num_timesteps = timesteps_from_metadata(ckpt.metadata)
