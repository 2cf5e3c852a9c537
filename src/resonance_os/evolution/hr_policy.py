"""Trained writing policies on disk, and articles written with one.

A PPO run folder (``resonance train --out runs/NAME``) is an ``rl.run`` run of kind ``"hr_ppo"``::

    config.json     {"kind": "hr_ppo", "algorithm": "PPO"}
    task.json       HRWritingEnv.settings(): the task, writer dynamics and observation the policy was
                    trained on
    checkpoint/     the PPO checkpoint (rl/checkpoint.py layout), replaced atomically
    metrics.jsonl   the training metrics, one row per PPO update

Runs saved before it (env.json + model/) still load; one saved before ``observation`` was recorded
saw the "full" one.

``write_with_policy`` writes an article with ``HumanResonantWriter.generate``, the policy revising
each drafted paragraph as in the env (``PolicyReviser``); given an HR-GRPO run folder
(``evolution.hr_grpo_run``) the fine-tuned language model drafts the article instead.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM
from resonance_os.evolution.hr_grpo_run import KIND as HR_GRPO_KIND
from resonance_os.evolution.hr_grpo_run import load_hr_grpo_run, policy_backend
from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, RewardModel
from resonance_os.generation.human_resonant_writer import Article, HumanResonantWriter, Paragraph
from resonance_os.profiles.targets import resolve_target
from resonance_os.quality.reward import DEFAULT_REWARD, reward_kind
from resonance_os.rl.algorithms.ppo import PPO
from resonance_os.rl.run import Run, RunError, is_run, open_run

KIND = "hr_ppo"
"""The ``rl.run`` kind of a PPO writing-policy run."""


def save_run(model: PPO, env: HRWritingEnv, out_dir: str | os.PathLike[str]) -> Path:
    """Save ``model`` and ``env``'s settings as the run in ``out_dir`` (created if missing). A PPO
    writing run already there (an API job's, begun by its trainer) keeps its metrics log and the
    settings its config recorded; the model's PPO configuration and the env's reward are written over
    theirs; any other run there is replaced."""
    config = {"algorithm": "PPO", "ppo": json.loads(model.config.to_json()), "reward": env.writer.reward.kind}
    if is_run(out_dir):
        try:
            earlier = open_run(out_dir)
        except RunError:
            earlier = None
        if earlier is not None and earlier.kind == KIND:
            config = {**earlier.config, **config}
    run = Run.create(out_dir, KIND, config=config, task=env.settings(), overwrite=True)
    run.save_checkpoint(model.save)
    return run.path


def run_reward(run: Run) -> str:
    """The writing reward a writing run (PPO or HR-GRPO) trained on: ``"fast"`` or ``"lm"`` as its
    config (or a PPO run's env settings) recorded it; ``"fast"`` for runs saved before it was."""
    return reward_kind(run.config.get("reward") or run.task.get("reward") or DEFAULT_REWARD)


def run_observation(run: Run) -> str:
    """What a PPO writing run's policy observes (``HRWritingEnv``'s ``observation``): as its env
    settings recorded it; else read from its checkpoint's observation space (8 floats: ``"gap"``, 17:
    ``"full"``); ``"full"`` for a run without either (saved before the gap was the default)."""
    observation = run.task.get("observation")
    if observation is None:
        space = run.checkpoint_metadata().get("observation_space") or {}
        observation = "gap" if space.get("shape") == [HRV_DIM] else "full"
    return observation


def open_writing_run(run_dir: str | os.PathLike[str]) -> Run:
    """The run in ``run_dir`` (``rl.run.open_run``), which must be a writing policy (PPO or HR-GRPO);
    a ``ValidationError`` saying how to make one otherwise."""
    try:
        run = open_run(run_dir)
        return run.expect(KIND, HR_GRPO_KIND)
    except RunError as exc:
        raise ValidationError(f"{exc}; create one with: resonance train --out RUN_DIR") from None


def load_run(
    run_dir: str | os.PathLike[str], reward_model: RewardModel | None = None
) -> tuple[PPO, HRWritingEnv]:
    """The trained model and a fresh env with the run's settings (and ``reward_model``, so drafts are
    judged as in training); a clear error if the folder is not a PPO run."""
    run = open_writing_run(run_dir)
    if run.kind != KIND or not run.has_checkpoint:
        raise ValidationError(
            f"{run.path} is not a trained PPO writing run (a {run.kind} run"
            f"{'' if run.has_checkpoint else ' without a checkpoint'}); create one with: resonance train --out RUN_DIR"
        )
    settings = dict(run.task)
    unknown = sorted(set(settings) - set(inspect.signature(HRWritingEnv.__init__).parameters))
    if unknown:
        raise ValidationError(
            f"{run.path} was trained on an older HRWritingEnv (settings {', '.join(unknown)} no longer exist); "
            "train it again with: resonance train --out RUN_DIR"
        )
    settings.update(observation=run_observation(run), reward=run_reward(run))
    env = HRWritingEnv(**settings, reward_model=reward_model)
    return PPO.load(run.checkpoint, env=env), env


class PolicyReviser:
    """A trained policy as the writer's reviser (``HumanResonantWriter.generate(reviser=...)``): the
    env's episode on a real draft: up to ``env.max_episode_steps`` revisions, the policy choosing each
    revision's edits from the measured HRV and the target; the best-scoring revision is kept (the
    first draft when no revision improves it)."""

    name = "policy"

    def __init__(self, model: PPO, env: HRWritingEnv) -> None:
        self.model, self.env = model, env

    def __call__(
        self,
        writer: HumanResonantWriter,
        paragraph: Paragraph,
        target: list[float],
        prompt: str,
        seed: int | None,
    ) -> Paragraph:
        obs, info = self.env.reset(
            seed=seed, options={"draft": (prompt, paragraph.text), "target_hrv": target}
        )
        best, best_score, scores, done = paragraph, info["score"], [info["score"]], False
        while not done:
            action, _ = self.model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = self.env.step(action)
            scores.append(info["score"])
            if info["score"] > best_score:
                best, best_score = self.env.paragraph, info["score"]
            done = terminated or truncated
        trace = {
            "layer": "policy",
            "revision_scores": [round(s, 4) for s in scores],
            "edits": best.trace.get("edits", []),
        }
        return Paragraph(best.text, best.score, trace)


def write_with_policy(
    run: str | os.PathLike[str] | tuple[PPO, HRWritingEnv],
    prompt: str,
    target_hrv: object = None,
    profile: object = None,
    num_paragraphs: int = 3,
    seed: int | None = None,
    store: str | os.PathLike[str] | None = None,
    writer: HumanResonantWriter | None = None,
    target_source: str | None = None,
    between_paragraphs: Callable[[], None] | None = None,
    reward: str | None = None,
) -> Article:
    """Write an article with a trained policy: a run folder or ``(model, env)``.

    A PPO run (``resonance train``) revises each paragraph ``writer`` drafts (default:
    ``HumanResonantWriter()``, the local language model when installed). An HR-GRPO run (``resonance
    train --method grpo``, ``evolution.hr_grpo_run``) *is* the drafting model: the article is drafted
    by its base model with the trained adapter, so ``writer`` must be None.
    The target is resolved here by ``profiles.targets.resolve_target(target_hrv, profile, store)`` and
    passed to the writer as a vector; with neither ``target_hrv`` nor ``profile``, the run's
    target is used. ``target_source`` overrides the label ``Article.target_source`` reports (an edge
    that resolved the target itself passes its source). ``between_paragraphs`` is passed to
    ``HumanResonantWriter.generate``: called before every paragraph after the first (a service reports
    progress there, or stops the writing by raising). ``reward`` (``"fast"`` or ``"lm"``) is the
    reward of the writer made here when ``writer`` is None (default: the one the run trained on); a
    PPO policy always revises under the reward it trained on.
    """
    if isinstance(run, (str, os.PathLike)) and open_writing_run(run).kind == HR_GRPO_KIND:
        if writer is not None:
            raise ValidationError(
                f"{run} is an HR-GRPO run: its fine-tuned model drafts the article, so no other writer "
                "or backend can be used with it (drop --backend)"
            )
        policy, settings = load_hr_grpo_run(run)
        writer = HumanResonantWriter(
            backend=policy_backend(policy, str(run)), reward=reward or settings["reward"]
        )
        reviser, run_target = None, settings["target_hrv"]
    else:
        model, env = load_run(run) if isinstance(run, (str, os.PathLike)) else run
        writer = writer or HumanResonantWriter(reward=reward or env.writer.reward.kind)
        reviser, run_target = PolicyReviser(model, env), env.targets[0].tolist()
    if target_hrv is None and profile is None:
        target, source = run_target, "policy run target"
    else:
        target, source = resolve_target(target_hrv, profile, store)
    return writer.generate(
        prompt,
        target,
        num_paragraphs=num_paragraphs,
        seed=seed,
        reviser=reviser,
        target_source=source if target_source is None else target_source,
        between_paragraphs=between_paragraphs,
    )
