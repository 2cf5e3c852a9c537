"""HR-GRPO run folders: the trained drafting model on disk, and a writer backend that drafts with it.

``resonance train --method grpo --out runs/NAME`` writes an ``rl.run`` run of kind ``"hr_grpo"``::

    config.json     {"kind": "hr_grpo", "method": "grpo", "base_model": "smollm2" or a local Hugging
                     Face folder, "steps": N, "reward": "fast" or "lm" (the writing reward it trained on)}
    task.json       {"target_hrv": [8 floats], "target_source": "..."}
    checkpoint/     the GRPO.save checkpoint (LoRA adapter, GRPO config, optimiser state; llm.policy layout)
    metrics.jsonl   one row per GRPO step (``resonance plot``)

Runs saved before it (run.json + policy/) still load. ``resonance generate --policy runs/NAME`` loads
the base model, applies the adapter and drafts with that policy
(``generation.backends.policy.PolicyBackend``, sampled as in training), so the article is written by
the fine-tuned model, toward the run's target unless another is given.

Usage::

    from resonance_os.evolution.hr_grpo import train_hr_grpo
    from resonance_os.evolution.hr_grpo_run import load_hr_grpo_run, policy_backend, save_hr_grpo_run

    trainer = train_hr_grpo(profile="acme/newsletter", steps=50, log_dir="runs/nl")
    save_hr_grpo_run(trainer, "runs/nl")
    policy, settings = load_hr_grpo_run("runs/nl")
    backend = policy_backend(policy, "runs/nl")   # a ChatBackend for HumanResonantWriter(backend=...)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.base_models import SMOLLM2, base_model
from resonance_os.quality.reward import DEFAULT_REWARD
from resonance_os.rl.run import Run, RunError, open_run

KIND = "hr_grpo"
"""The ``rl.run`` kind of an HR-GRPO run."""
METHOD = "grpo"


def save_hr_grpo_run(trainer: Any, out_dir: str | os.PathLike[str], base: str = SMOLLM2) -> Path:
    """Save a ``train_hr_grpo`` trainer as a run folder (``rl.run``): its checkpoint (``GRPO.save``),
    the base model and the resolved target, each written atomically. Returns the folder."""
    run = Run.create(
        out_dir,
        KIND,
        config={
            "method": METHOD,
            "base_model": str(base),
            "steps": trainer.num_timesteps,
            "reward": trainer.hr_reward.reward.kind,
        },
        task={"target_hrv": [float(v) for v in trainer.hr_target], "target_source": trainer.hr_source},
        overwrite=True,
    )
    run.save_checkpoint(trainer.save)
    return run.path


def is_hr_grpo_run(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir`` is an HR-GRPO run folder (of this layout or the one before it)."""
    try:
        return open_run(run_dir).kind == KIND
    except RunError:
        return False


def load_hr_grpo_run(
    run_dir: str | os.PathLike[str], device: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """The run's ``LMPolicy`` (base model + the trained adapter) and its settings (``method``,
    ``base_model``, ``steps``, ``reward`` (``"fast"`` for runs saved before it was recorded),
    ``target_hrv``, ``target_source``)."""
    from resonance_os.llm.policy import LMPolicy

    try:
        run = open_run(run_dir).expect(KIND)
    except RunError as exc:
        raise ValidationError(
            f"{run_dir} is not an HR-GRPO run ({exc}); create one with: resonance train --method grpo --out RUN_DIR"
        ) from None
    settings = {"reward": DEFAULT_REWARD, **run.config, **run.task}
    if not run.has_checkpoint:
        raise ValidationError(f"{run.path} has no trained policy ({run.checkpoint}); train the run again")
    if not isinstance(settings.get("target_hrv"), list) or not isinstance(settings.get("base_model"), str):
        raise ValidationError(f"{run.path} lacks target_hrv or base_model; train the run again")
    tokenizer, model = base_model(settings["base_model"], device)
    policy = LMPolicy.load(run.checkpoint, tokenizer, model)
    return policy, settings


def policy_backend(policy: Any, label: str = "") -> Any:
    """A chat backend for ``HumanResonantWriter(backend=...)`` that drafts with ``policy`` (base model +
    trained adapter), sampled as HR-GRPO sampled it in training (temperature and top-p of
    ``HR_GRPO_DEFAULTS``, the engine's own loop). Its ``name`` is ``"local+grpo"`` (with ``label``,
    e.g. the run folder, in brackets), which ``Article.backend`` reports."""
    from resonance_os.evolution.hr_grpo import HR_GRPO_DEFAULTS
    from resonance_os.generation.backends.policy import PolicyBackend

    return PolicyBackend(
        policy,
        name=f"local+grpo ({label})" if label else "local+grpo",
        temperature=HR_GRPO_DEFAULTS["temperature"],
        top_p=HR_GRPO_DEFAULTS["top_p"],
    )
