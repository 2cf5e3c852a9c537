"""Training that survives being killed: any ``rl.contract`` trainer, checkpointed into its run folder
(``rl.run``) as it learns and continued from there by the next attempt.

Usage (an API training job; any caller that may be stopped mid-run)::

    run = Run.create(folder, "ppo", exist_ok=True)
    model = learn_resumable(
        run, 100_000,
        build=lambda: PPO("MlpPolicy", env, log_dir=run.metrics_path.parent, **config),
        load=lambda path: PPO.load(path, env=env, log_dir=run.metrics_path.parent),
        hooks=ResumeHooks(checkpoint_every=5, progress=lambda fraction, rows, final: print(fraction)),
    )
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from resonance_os.rl.contract import RLAlgorithm
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.run import Run

Model = TypeVar("Model", bound=RLAlgorithm)


@dataclass
class ResumeHooks:
    """What :func:`learn_resumable` tells its caller: ``resumed(timesteps)`` when it continues from a
    checkpoint, ``checkpointed(timesteps)`` after each save, and ``progress(fraction, rows, final)``
    with every metrics row so far: polled from the run's metrics log every ``poll_s`` seconds, and
    once more (``final=True``) when learning ends."""

    checkpoint_every: int = 1
    resumed: Callable[[int], None] | None = None
    checkpointed: Callable[[int], None] | None = None
    progress: Callable[[float, list[dict], bool], None] | None = None
    poll_s: float = 1.0


def learn_resumable(
    run: Run,
    total: int,
    build: Callable[[], Model],
    load: Callable[[Path], Model],
    hooks: ResumeHooks | None = None,
) -> Model:
    """``build()``'s model (or ``load(run.checkpoint)``'s, when an earlier attempt left a checkpoint)
    trained until ``total`` timesteps, its checkpoint replaced atomically (``Run.save_checkpoint``)
    every ``hooks.checkpoint_every`` updates before the end. The caller saves the final model."""
    hooks = hooks or ResumeHooks()
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise ConfigError(f"total={total!r} must be a whole number of timesteps >= 1")
    if run.has_checkpoint:
        model = load(run.checkpoint)
        if hooks.resumed is not None:
            hooks.resumed(model.num_timesteps)
    else:
        model = build()
    updates = 0

    def save_every_n(model: Model, _metrics: dict) -> None:
        nonlocal updates
        updates += 1
        if updates % max(1, hooks.checkpoint_every) == 0 and model.num_timesteps < total:
            run.save_checkpoint(model.save)
            if hooks.checkpointed is not None:
                hooks.checkpointed(model.num_timesteps)

    stop = threading.Event()
    follower = threading.Thread(target=_follow_metrics, args=(run, total, hooks, stop), daemon=True)
    follower.start()
    try:
        if model.num_timesteps < total:
            model.learn(
                total - model.num_timesteps,
                callback=save_every_n,
                progress_bar=False,
                reset_num_timesteps=False,
            )
    finally:
        stop.set()
        follower.join()
    rows = run.metrics()
    if rows and hooks.progress is not None:  # the follower polls: report the last updates too
        hooks.progress(model.num_timesteps / total, rows, True)
    return model


def _follow_metrics(run: Run, total: int, hooks: ResumeHooks, stop: threading.Event) -> None:
    """Turn the run's metrics log into ``hooks.progress`` (timesteps / total) until ``stop`` is set."""
    if hooks.progress is None:
        return
    while not stop.wait(hooks.poll_s):
        rows = run.metrics()
        if rows:
            hooks.progress(float(rows[-1].get("timesteps", 0)) / total, rows, False)
