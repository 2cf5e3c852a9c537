"""HR-GRPO run folders: the trained drafting model on disk, and a writer backend that drafts with it.

``resonance train --method grpo --out runs/NAME`` writes::

    policy/         the GRPO.save checkpoint (LoRA adapter, GRPO config, optimiser state; llm.policy layout)
    run.json        {"method": "grpo", "base_model": "smollm2" or a local Hugging Face folder,
                     "target_hrv": [8 floats], "target_source": "...", "steps": N}
    metrics.jsonl   one row per GRPO step (``resonance plot``)

``resonance generate --policy runs/NAME`` loads the base model, applies the adapter and drafts with
that policy (``generation.backends.policy.PolicyBackend``, sampled as in training), so the article is
written by the fine-tuned model, toward the run's target unless another is given.

Usage::

    from resonance_os.evolution.hr_grpo import train_hr_grpo
    from resonance_os.evolution.hr_grpo_run import load_hr_grpo_run, policy_backend, save_hr_grpo_run

    trainer = train_hr_grpo(profile="acme/newsletter", steps=50, log_dir="runs/nl")
    save_hr_grpo_run(trainer, "runs/nl")
    policy, settings = load_hr_grpo_run("runs/nl")
    backend = policy_backend(policy, "runs/nl")   # a ChatBackend for HumanResonantWriter(backend=...)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.base_models import SMOLLM2, base_model

RUN_FILE = "run.json"
POLICY_DIR = "policy"
METHOD = "grpo"


def save_hr_grpo_run(trainer: Any, out_dir: str | os.PathLike[str], base: str = SMOLLM2) -> Path:
    """Save a ``train_hr_grpo`` trainer as a run folder: ``policy/`` (``GRPO.save``) and ``run.json``
    (method, base model, resolved target), each written atomically. Returns the folder."""
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    trainer.save(root / POLICY_DIR)
    settings = {
        "method": METHOD,
        "base_model": str(base),
        "target_hrv": [float(v) for v in trainer.hr_target],
        "target_source": trainer.hr_source,
        "steps": trainer.num_timesteps,
    }
    tmp = root / f".{RUN_FILE}.tmp"
    tmp.write_text(json.dumps(settings, indent=2))
    tmp.replace(root / RUN_FILE)
    return root


def is_hr_grpo_run(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir`` is an HR-GRPO run folder (its ``run.json`` says method "grpo")."""
    file = Path(run_dir) / RUN_FILE
    try:
        return file.is_file() and json.loads(file.read_text()).get("method") == METHOD
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


def load_hr_grpo_run(
    run_dir: str | os.PathLike[str], device: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """The run's ``LMPolicy`` (base model + the trained adapter) and its ``run.json`` settings."""
    from resonance_os.llm.policy import LMPolicy

    root = Path(run_dir)
    if not is_hr_grpo_run(root) or not (root / POLICY_DIR).is_dir():
        raise ValidationError(
            f"{root} is not an HR-GRPO run (it needs {RUN_FILE} with method 'grpo' and {POLICY_DIR}/); "
            "create one with: resonance train --method grpo --out RUN_DIR"
        )
    settings = json.loads((root / RUN_FILE).read_text())
    if not isinstance(settings.get("target_hrv"), list) or not isinstance(settings.get("base_model"), str):
        raise ValidationError(f"{root / RUN_FILE} lacks target_hrv or base_model; train the run again")
    tokenizer, model = base_model(settings["base_model"], device)
    policy = LMPolicy.load(root / POLICY_DIR, tokenizer, model)
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
