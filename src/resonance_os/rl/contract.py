"""The surface every trainer shares: PPO, SAC, GP control (``rl.algorithms``), GRPO and DDPO.

A user who learnt one of them knows the others (docs/rl_contract.md)::

    model.learn(total_timesteps, callback=None, progress_bar=False, reset_num_timesteps=True) -> model
    callback(model, metrics) -> bool | None   after every update; returning False stops training
    model.history                              every metrics row of this model, oldest first
    model.num_timesteps                        env steps (GRPO: optimiser steps) done so far
    model.save(path)                           metadata.json holds num_timesteps and last_metrics
    seed                                       seeds the model's own generators only: torch's global
                                               RNG is neither read nor advanced

:class:`RLAlgorithm` states it as a ``typing.Protocol``; the helpers below are the single place that
decides the checkpoint keys, the callback shape and how a seed reaches torch.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import numpy as np

from resonance_os.rl.errors import ConfigError
from resonance_os.rl.logger import MetricsLogger

Callback = Callable[[Any, dict[str, Any]], bool | None]
"""``callback(model, metrics)``: runs after every update; returning ``False`` stops ``learn``."""

CHECKPOINT_KEYS = ("num_timesteps", "last_metrics")
"""Keys every trainer writes to its checkpoint's ``metadata.json`` (beside ``algorithm``, which
``rl.checkpoint`` checks on load; a GRPO checkpoint is an ``LMPolicy`` one with ``trainer: "GRPO"``)."""

LEGACY_TIMESTEPS_KEY = "timesteps"
"""What SAC and GP control checkpoints of older builds called ``num_timesteps``; still read."""


@runtime_checkable
class RLAlgorithm(Protocol):
    """What PPO, SAC, GPController, GRPO and DDPO have in common (checked by tests/rl/test_contract.py)."""

    num_timesteps: int
    history: list[dict[str, Any]]

    def learn(
        self,
        total_timesteps: int,
        /,
        callback: Callback | None = None,
        progress_bar: bool = False,
        reset_num_timesteps: bool = True,
    ) -> Any: ...

    def save(self, path: str | os.PathLike[str]) -> Any: ...


def checkpoint_metadata(model: RLAlgorithm) -> dict[str, Any]:
    """The shared part of a checkpoint's metadata (:data:`CHECKPOINT_KEYS`): step count, last metrics row."""
    return {
        "num_timesteps": int(model.num_timesteps),
        "last_metrics": model.history[-1] if model.history else {},
    }


def timesteps_from_metadata(metadata: Mapping[str, Any]) -> int:
    """``num_timesteps`` of a checkpoint, also from older builds that wrote it as ``timesteps``."""
    return int(metadata.get("num_timesteps", metadata.get(LEGACY_TIMESTEPS_KEY, 0)))


def as_callback(callback: Callable[..., Any] | None, algorithm: str) -> Callback | None:
    """``callback`` in the shared ``(model, metrics)`` shape.

    A callable taking only the model (SAC's and GP control's form before the shared contract) still
    works for now: it is wrapped, with a ``DeprecationWarning`` naming the fix.
    """
    if callback is None:
        return None
    if not callable(callback):
        raise ConfigError(
            f"callback={callback!r} is not callable; pass a function (model, metrics) -> bool | None"
        )
    try:
        parameters = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): trust the caller
        return callback
    positional = [
        p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in positional):
        return callback
    if len(positional) == 1:
        warnings.warn(
            f"{algorithm} callbacks take (model, metrics); a callback taking only the model is deprecated. "
            "Add a second parameter for the metrics row.",
            DeprecationWarning,
            stacklevel=3,
        )
        return lambda model, metrics: callback(model)
    raise ConfigError(f"callback {callback!r} takes no positional arguments; it must accept (model, metrics)")


def draw_seed(seed: int | None) -> int:
    """``seed``, or a fresh one from the OS when ``None`` (neither numpy's nor torch's global RNG is used)."""
    return int(seed) if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])


@contextmanager
def seeded_torch(seed: int) -> Iterator[None]:
    """Run a block (building ``nn.Module``s, whose default init draws from torch's global RNG) with the
    global CPU RNG seeded to ``seed``, and restore the caller's RNG state afterwards."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def learn_in_steps(
    model: Any,
    steps: int,
    train_step: Callable[[int], dict[str, float]],
    *,
    callback: Callable[..., Any] | None,
    progress_bar: bool,
    reset_num_timesteps: bool,
    algorithm: str,
) -> None:
    """The ``learn`` loop of trainers that count optimiser steps (GRPO, SFT): ``train_step(step)`` per
    step, one metrics row each through ``MetricsLogger`` (``model.log_dir``, ``model.tensorboard``) into
    ``model.history``, ``callback(model, row)`` after each (``False`` stops)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ConfigError(f"steps={steps!r} must be an integer >= 0")
    callback = as_callback(callback, algorithm)
    if reset_num_timesteps:
        model.num_timesteps = 0
    target = model.num_timesteps + steps
    logger = MetricsLogger(
        model.log_dir,
        tensorboard=model.tensorboard,
        progress_bar=progress_bar,
        total_timesteps=target,
        description=algorithm,
    )
    try:
        while model.num_timesteps < target:
            metrics = train_step(model.num_timesteps)
            model.num_timesteps += 1
            row = logger.record(metrics, model.num_timesteps)
            model.history.append(row)
            if callback is not None and callback(model, row) is False:
                break
    finally:
        logger.close()
