"""The supervised warm-up before RL from traces: when the base model never solves a task, every
rollout scores alike and GRPO has nothing to learn from, so the adapter is first fine-tuned on
demonstrations, the agent's own first call for each training task answered the way it should be
(e.g. with the task's gold SQL).

The agent module supplies ``demonstrate(task) -> {"prompt": messages, "completion": text}``: the chat
messages its first call sends (the endpoint renders them with the served model's chat template, as
:meth:`~resonance_os.llm.policy.LMPolicy.encode_prompts` does here, so the warm-up trains on the very
prompt tokens the recorded spans will carry) and the reply wanted. The fine-tuning is
:class:`~resonance_os.llm.sft.SFT` (completion-only NLL, EOS appended) on the LoRA adapter the agent
trainer then serves; :func:`start_from` loads the saved checkpoint into the trainer's policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sft import SFT, SFTConfig
from resonance_os.rl.errors import ConfigError

Demonstrate = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class WarmupConfig:
    """``resonance agents warmup``'s [warmup] table (besides ``demonstrations``)."""

    steps: int = 60
    batch_size: int = 8
    learning_rate: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ConfigError(f"steps={self.steps!r} must be an integer >= 1 (optimiser steps)")


def demonstrations(tasks: Sequence[dict[str, Any]], demonstrate: Demonstrate) -> list[dict[str, Any]]:
    """``demonstrate(task)`` for every task, checked: a ``prompt`` (chat messages or text) and a
    non-empty ``completion``; a bad one is a ``ConfigError`` naming the task."""
    pairs = []
    for task in tasks:
        name = task.get("id", task) if isinstance(task, dict) else task
        try:
            pair = demonstrate(task)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"the demonstration of task {name!r} failed: {exc!r}") from None
        prompt = pair.get("prompt") if isinstance(pair, dict) else None
        completion = pair.get("completion") if isinstance(pair, dict) else None
        prompt_ok = isinstance(prompt, str) or (
            isinstance(prompt, list) and bool(prompt) and all(isinstance(m, dict) for m in prompt)
        )
        if not prompt_ok or not isinstance(completion, str) or not completion.strip():
            raise ConfigError(
                f"the demonstration of task {name!r} must be a dict with 'prompt' (chat messages or text) "
                f"and a non-empty 'completion' string, got {pair!r}"
            )
        pairs.append({"prompt": prompt, "completion": completion})
    return pairs


def warm_up(
    policy: LMPolicy,
    pairs: Sequence[dict[str, Any]],
    config: WarmupConfig,
    out: Path,
    validation: Sequence[dict[str, Any]] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Fine-tune ``policy`` on ``pairs`` for ``config.steps`` steps and save it to ``out/checkpoint``
    (per-step metrics in ``out/metrics.jsonl``). Reports the loss per completion token before and
    after, on ``pairs`` and, when given, on ``validation`` (demonstrations of held-out tasks, never
    trained on)."""
    if not pairs:
        raise ConfigError("no demonstration to warm up on; the agent needs at least one training task")
    sft = SFT(
        policy,
        list(pairs),
        SFTConfig(batch_size=config.batch_size, learning_rate=config.learning_rate, seed=config.seed),
        log_dir=out,
    )

    def losses() -> dict[str, float]:
        measured = {"train": sft.evaluate()}
        if validation:
            measured["validation"] = sft.evaluate(list(validation))
        return measured

    before = losses()
    log(f"warm-up: {len(pairs)} demonstrations, loss before {_shown(before)}; {config.steps} steps")
    sft.learn(config.steps)
    after = losses()
    checkpoint = sft.save(out / "checkpoint")
    log(f"warm-up: loss after {_shown(after)}; checkpoint {checkpoint}")
    return {"demonstrations": len(pairs), "validation": len(validation), "steps": config.steps,
            "loss_before": before, "loss_after": after, "checkpoint": str(checkpoint)}  # fmt: skip


def _shown(losses: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3f}" for name, value in losses.items())


def start_from(policy: LMPolicy, checkpoint: Path) -> None:
    """Load a warm-up (or any policy) checkpoint's weights into ``policy``, built with the same
    ``PolicyConfig``; ``CheckpointError`` naming the problem otherwise."""
    policy.load_weights_from(checkpoint)
