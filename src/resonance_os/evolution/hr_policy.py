"""Trained writing policies on disk, and articles written with one.

A run folder (``resonance train --out runs/NAME``) holds::

    model/          the PPO checkpoint (rl/checkpoint.py layout)
    env.json        HRWritingEnv.settings(): the task and writer dynamics the policy was trained on
    metrics.jsonl   the training metrics, one row per PPO update

``write_with_policy`` plans an article like ``HumanResonantWriter`` and writes each paragraph as an
episode of that env (``revise_paragraph``): a first draft, then the policy's revisions, keeping the
revision with the highest env reward.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, RewardModel
from resonance_os.generation.defaults import resolve_target
from resonance_os.generation.human_resonant_writer import Article
from resonance_os.generation.planner_layer import validate_num_paragraphs
from resonance_os.generation.topics import validate_prompt
from resonance_os.rl.algorithms.ppo import PPO

MODEL_DIR = "model"
ENV_FILE = "env.json"


def save_run(model: PPO, env: HRWritingEnv, out_dir: str | os.PathLike[str]) -> Path:
    """Save ``model`` and ``env``'s settings into the run folder ``out_dir`` (created if missing)."""
    root = Path(out_dir)
    model.save(root / MODEL_DIR)
    tmp = root / f".{ENV_FILE}.tmp"
    tmp.write_text(json.dumps(env.settings(), indent=2))
    tmp.replace(root / ENV_FILE)
    return root


def load_run(
    run_dir: str | os.PathLike[str], reward_model: RewardModel | None = None
) -> tuple[PPO, HRWritingEnv]:
    """The trained model and a fresh env with the run's settings (and ``reward_model``, so drafts are
    judged as in training); a clear error if the folder is not a run."""
    root = Path(run_dir)
    if not (root / ENV_FILE).is_file() or not (root / MODEL_DIR).is_dir():
        raise ValidationError(
            f"{root} is not a training run (it needs {ENV_FILE} and {MODEL_DIR}/); "
            "create one with: resonance train --out RUN_DIR"
        )
    try:
        settings = json.loads((root / ENV_FILE).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{root / ENV_FILE} is unreadable ({exc}); train the run again") from exc
    env = HRWritingEnv(**settings, reward_model=reward_model)
    return PPO.load(root / MODEL_DIR, env=env), env


def revise_paragraph(
    model: PPO, env: HRWritingEnv, prompt: str, target: Sequence[float], seed: int | None = None
) -> tuple[dict[str, Any], list[float]]:
    """One episode of ``env`` toward ``target``: a first draft, then the policy's (deterministic) revisions.

    Returns the ``info`` of the revision with the highest env reward (the quantity the policy was
    trained on: the writing reward, blended with the env's reward model when it has one) and every
    revision's reward.
    """
    obs, best = env.reset(seed=seed, options={"prompt": prompt, "target_hrv": list(target)})
    best_reward, rewards, done = -math.inf, [], False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(float(reward))
        if reward > best_reward:
            best, best_reward = info, reward
        done = terminated or truncated
    return best, rewards


def write_with_policy(
    run: str | os.PathLike[str] | tuple[PPO, HRWritingEnv],
    prompt: str,
    target_hrv: object = None,
    profile: object = None,
    num_paragraphs: int = 3,
    seed: int | None = None,
    store: str | os.PathLike[str] | None = None,
) -> Article:
    """Write an article whose paragraphs are revised by a trained policy (a run folder or ``(model, env)``).

    Targets resolve as in ``HumanResonantWriter.generate``; without one, the run's own target is used.
    """
    model, env = load_run(run) if isinstance(run, (str, os.PathLike)) else run
    prompt = validate_prompt(prompt)
    num_paragraphs = validate_num_paragraphs(num_paragraphs)
    if target_hrv is None and profile is None:
        target, source = env.targets[0].tolist(), "the policy's training target"
    else:
        target, source = resolve_target(target_hrv, profile, store)
    writer = env.writer
    outlines, targets = writer.planner.plan_paragraphs(prompt, num_paragraphs, target)
    rng = random.Random(seed)
    paragraphs: list[str] = []
    measured: list[list[float]] = []
    trace: list[dict[str, Any]] = [{"layer": "planner", "target_source": source, "policy": "PPO"}]
    for outline, paragraph_target in zip(outlines, targets):
        best, rewards = revise_paragraph(model, env, prompt, paragraph_target, rng.getrandbits(31))
        trace.append(
            {
                "layer": "policy",
                "paragraph": outline.index,
                "revision_rewards": [round(r, 4) for r in rewards],
            }
        )
        paragraphs.append(best["text"])
        measured.append(best["measured_hrv"])
    article_text = "\n\n".join(paragraphs)
    article_hrv = writer.extractor.extract(article_text)
    return Article(
        prompt=prompt,
        paragraphs=paragraphs,
        target_hrv=list(target),
        paragraph_targets=[list(t) for t in targets],
        measured_hrv={"article": article_hrv, "paragraphs": measured},
        resonance=float(writer.similarity.calculate_similarity(article_hrv, target)),
        target_source=source,
        backend="builtin+policy",
        seed=seed,
        score=env.writing_reward.score(article_text, target, prompt=prompt, hrv=article_hrv),
        trace=trace,
    )
