"""``--adapter`` of the profile-building commands: train a voice adapter from the writer's own
paragraphs and store it with the profile, where the writer finds it (``generation.voice_adapter``).

SFT on the writer's paragraphs nearest the profile (a tenth of the paragraphs held out: SFT keeps
the weights that read them best), then HR-GRPO toward the profile's HRV (``evolution.voice_adapters``); about 14 minutes for SmolLM2 on the shared 2-core CPU with the defaults (818 s for builtin/professional).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import typer

from resonance_os.cli.errors import error_console

AdapterOpt = typer.Option(
    False,
    "--adapter",
    help="Also train a voice adapter (SmolLM2 + LoRA: SFT on these paragraphs, then HR-GRPO toward the "
    "profile; minutes on a CPU) and store it with the profile: `resonance generate --profile` then drafts with it.",
)
AdapterStepsOpt = typer.Option(
    None, "--adapter-steps", min=0, help="HR-GRPO steps after the SFT (default 12; 0 = SFT only)."
)
AdapterModelOpt = typer.Option(
    "smollm2", "--adapter-model", help="Base model: smollm2 (default) or a local Hugging Face folder."
)


def check_adapter_text(paragraphs: Sequence[str]) -> None:
    """Refuse, before anything is saved, a text with no paragraph long enough to learn from."""
    from resonance_os.evolution.voice_adapters import writer_candidates

    writer_candidates(paragraphs)


def train_profile_adapter(
    profile_key: str,
    target: Sequence[float],
    paragraphs: Sequence[str],
    store: str | None,
    *,
    grpo_steps: int | None = None,
    base: str = "smollm2",
) -> Path:
    """Train the voice adapter of ``profile_key`` (``tenant/name``) from ``paragraphs`` and store it
    in the profile's adapter folder; progress goes to standard error. Returns the folder."""
    from resonance_os.evolution.voice_adapters import (
        VoiceTraining,
        save_voice_adapter,
        split_validation,
        train_voice_adapter,
        voice_policy,
        writer_candidates,
    )
    from resonance_os.generation.voice_adapter import adapter_dir

    candidates, validation = split_validation(writer_candidates(paragraphs))
    settings = VoiceTraining(keep=min(VoiceTraining.keep, len(candidates)))
    if grpo_steps is not None:
        settings = replace(settings, grpo_steps=grpo_steps)
    folder = adapter_dir(profile_key, store)
    error_console.print(
        f"training the voice adapter of {profile_key} from {len(candidates)} paragraphs"
        + (f" ({len(validation)} more held out to decide when to stop)" if validation else "")
    )
    policy, summary = train_voice_adapter(
        target,
        candidates,
        validation=validation,
        settings=settings,
        policy=voice_policy(base=base),
        report=lambda msg: error_console.print(f"  {msg}", markup=False, highlight=False),
    )
    save_voice_adapter(policy, folder, target, source=profile_key, base=base, summary=summary)
    error_console.print(f"voice adapter stored in {folder}", markup=False, highlight=False)
    return folder
