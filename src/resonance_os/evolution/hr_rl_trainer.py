"""HRWritingEnv and train_hr_ppo: learn to steer the writer's controls so measured text resonates.

>>> from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, train_hr_ppo
>>> env = HRWritingEnv(hrv_dim=8)
>>> model = train_hr_ppo(env, timesteps=5000)  # doctest: +SKIP

The task (docs/hr_rl.md has the full design): each step the agent proposes an 8-dimensional
adjustment in [-1, 1]; the env sets the writer's knobs to ``target + action_scale * action``, the
built-in writer writes a fresh paragraph and the ``HRVExtractor`` measures
it. The observation is the measured HRV of that draft; the reward is the writing reward
(``quality.reward.WritingReward``: resonance with the target times fluency, coherence, topic and
no repetition).
The map from controls to measured HRV is biased and noisy: every draft is new text (noise), the
writer lands each dimension off its control by a text-dependent amount, and its control knobs are
miscalibrated the way an untuned generator's are: a knob set to ``c`` writes toward ``c + offset``
(per dimension; a fixed draw from ``calibration_seed``). A zero adjustment therefore misses
the target; the agent must learn the corrections from what it measures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM, HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVProfile
from resonance_os.generation.defaults import resolve_target
from resonance_os.generation.human_resonant_writer import HumanResonantWriter
from resonance_os.generation.planner_layer import Outline
from resonance_os.generation.topics import validate_prompt
from resonance_os.quality.reward import REWARD_TERMS, WritingReward, WritingScore
from resonance_os.rl.algorithms.ppo import PPO, PPOConfig
from resonance_os.rl.policies import HRV_POLICY_KWARGS
from resonance_os.similarity.metrics import SimilarityMethod, resolve_method

DEFAULT_MAX_EPISODE_STEPS = 1
DEFAULT_ACTION_SCALE = 1.0
DEFAULT_REWARD_MODEL_WEIGHT = 0.5
DEFAULT_DRAFT_POOL_SIZE = 16
MAX_KNOB_OFFSET = 0.25


def writer_miscalibration(seed: int | None) -> np.ndarray:
    """The 8 knob offsets of the writer, drawn uniformly in [-MAX_KNOB_OFFSET, MAX_KNOB_OFFSET] from
    ``seed``; ``seed=None`` gives the calibrated writer (all zero)."""
    if seed is None:
        return np.zeros(HRV_DIM)
    return np.random.default_rng(seed).uniform(-MAX_KNOB_OFFSET, MAX_KNOB_OFFSET, HRV_DIM)


DEFAULT_PROMPTS: tuple[str, ...] = (
    "remote work and team culture",
    "the future of city gardens",
    "why small businesses should care about data privacy",
    "learning to cook on a budget",
    "electric bikes and the daily commute",
    "how libraries are changing",
    "onboarding new engineers",
    "a weekend hiking trip in the mountains",
)
"""Prompts an episode samples from when none are given."""


def _resolve_target_item(item: object, store: str | os.PathLike[str] | None) -> np.ndarray:
    """An HRV, a ``"tenant/name"`` profile key or an ``HRVProfile`` -> the target vector."""
    if isinstance(item, (str, HRVProfile)):
        return np.asarray(resolve_target(None, item, store)[0])
    return np.asarray(resolve_target(item, None, store)[0])


class RewardModel(Protocol):
    """What ``HRWritingEnv(reward_model=...)`` needs: a score in [0, 1] for a text and its target."""

    def predict(self, text: str, target_hrv: Sequence[float]) -> float: ...


@dataclass
class _Episode:
    prompt: str
    target: np.ndarray
    outline: Outline
    controls: np.ndarray | None = None
    text: str = ""
    measured: np.ndarray | None = None
    score: WritingScore | None = None
    steps: int = 0


class HRWritingEnv(gym.Env):
    """A gymnasium env in which a policy adjusts the writer's HRV controls toward a target profile.

    Args:
        hrv_dim: must be 8 (the HRV's dimensions); kept for the spec's ``HRWritingEnv(hrv_dim=8)``.
        target_hrv: the target (8 floats in [0, 1]); else ``profile``; else the default profile.
        profile: ``"tenant/name"`` or an ``HRVProfile`` (resolved like ``HumanResonantWriter``).
        writer: a ``HumanResonantWriter`` with the built-in backend (one is created if omitted).
        reward_model: an object with ``predict(text, target_hrv) -> [0, 1]`` blended into the reward.
        max_episode_steps: revisions per episode; when they are spent the draft is final and the
            episode terminates. 1 (a first draft, then one revision).
        prompts: prompts sampled per episode. ``DEFAULT_PROMPTS``.
        targets: several targets (HRVs or profile keys) sampled per episode; the observation then
            appends the target (16 values).
        action_scale: how far an action of 1.0 moves a control away from the target. 1.0.
        calibration_seed: draws the writer's knob miscalibration (see ``writer_miscalibration``);
            ``None`` uses the calibrated writer. 0.
        reward_model_weight: weight ``w`` of the reward model: ``reward = (1-w) writing reward + w score``.
            0.5.
        similarity_method: how the reward's style term (resonance) is measured; ``manhattan``
            (1 - mean absolute gap) by default.
        draft_pool_size: first drafts (zero adjustment) kept per prompt and target; once a pool is
            full, ``reset`` draws from it instead of writing anew, which halves the cost of short
            episodes. 0 writes every first draft. 16.
        seed: seeds the first ``reset()`` when it gets no seed.
        render_mode: ``"ansi"`` returns the current draft and its HRV table as a string.

    Spaces: observation ``Box(0, 1, (8,))`` (the measured HRV; ``(16,)`` with ``targets``), action
    ``Box(-1, 1, (8,))``. ``info`` carries ``text``, ``measured_hrv``, ``target_hrv``, ``controls``,
    ``prompt`` and the reward's terms ``resonance``, ``fluency``, ``coherence``, ``topic``,
    ``repetition`` and ``reward`` (the writing reward, before any reward-model blend).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        hrv_dim: int = HRV_DIM,
        target_hrv: Sequence[float] | None = None,
        profile: object = None,
        writer: HumanResonantWriter | None = None,
        reward_model: RewardModel | None = None,
        max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS,
        prompts: Sequence[str] | None = None,
        targets: Sequence[Sequence[float]] | None = None,
        action_scale: float = DEFAULT_ACTION_SCALE,
        calibration_seed: int | None = 0,
        reward_model_weight: float = DEFAULT_REWARD_MODEL_WEIGHT,
        similarity_method: SimilarityMethod | str = SimilarityMethod.MANHATTAN,
        draft_pool_size: int = DEFAULT_DRAFT_POOL_SIZE,
        seed: int | None = None,
        render_mode: str | None = None,
        store: str | os.PathLike[str] | None = None,
    ) -> None:
        if hrv_dim != HRV_DIM:
            raise ValidationError(f"hrv_dim must be {HRV_DIM} (the HRV's dimensions), got {hrv_dim!r}")
        if not isinstance(max_episode_steps, int) or max_episode_steps < 1:
            raise ValidationError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
        if not 0.0 < action_scale <= 1.0:
            raise ValidationError(f"action_scale must be in (0, 1], got {action_scale!r}")
        if not isinstance(draft_pool_size, int) or draft_pool_size < 0:
            raise ValidationError(f"draft_pool_size must be an integer >= 0, got {draft_pool_size!r}")
        if not 0.0 <= reward_model_weight <= 1.0:
            raise ValidationError(f"reward_model_weight must be in [0, 1], got {reward_model_weight!r}")
        if render_mode not in (None, "ansi"):
            raise ValidationError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if reward_model is not None and not callable(getattr(reward_model, "predict", None)):
            raise ValidationError("reward_model must have a predict(text, target_hrv) -> float method")
        self.writer = writer or HumanResonantWriter(backend="builtin", refine=False)
        if not hasattr(self.writer, "sentence_layer"):
            raise ValidationError(
                f"HRWritingEnv needs a writer with the built-in backend, got backend {self.writer.backend_name!r}; "
                "pass HumanResonantWriter(backend='builtin') or writer=None"
            )
        if targets is not None:
            if target_hrv is not None or profile is not None:
                raise ValidationError("give targets, or target_hrv/profile, not both")
            self.targets = [_resolve_target_item(t, store) for t in targets]
            if not self.targets:
                raise ValidationError("targets must hold at least one HRV")
        else:
            self.targets = [np.asarray(resolve_target(target_hrv, profile, store)[0])]
        self.prompts = [validate_prompt(p) for p in (prompts if prompts is not None else DEFAULT_PROMPTS)]
        if not self.prompts:
            raise ValidationError("prompts must hold at least one prompt")
        self.hrv_dim = hrv_dim
        self.max_episode_steps = max_episode_steps
        self.action_scale = float(action_scale)
        self.calibration_seed = calibration_seed
        self.knob_offsets = writer_miscalibration(calibration_seed)
        self.reward_model = reward_model
        self.reward_model_weight = float(reward_model_weight) if reward_model is not None else 0.0
        self.similarity_method = resolve_method(similarity_method)
        self.render_mode = render_mode
        self.observe_target = targets is not None
        obs_dim = 2 * HRV_DIM if self.observe_target else HRV_DIM
        self.observation_space = gym.spaces.Box(0.0, 1.0, (obs_dim,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (HRV_DIM,), dtype=np.float32)
        self.writing_reward = WritingReward(
            extractor=self.writer.extractor, similarity_method=self.similarity_method.value
        )
        self._outlines: dict[str, Outline] = {}
        self.draft_pool_size = draft_pool_size
        self._first_drafts: dict[
            tuple[str, tuple[float, ...]], list[tuple[str, np.ndarray, WritingScore]]
        ] = {}
        self._initial_seed = seed
        self._episode: _Episode | None = None

    @property
    def target_hrv(self) -> list[float]:
        """The current episode's target (the first target before any reset)."""
        return (self._episode.target if self._episode else self.targets[0]).tolist()

    def settings(self) -> dict[str, Any]:
        """The JSON-serialisable arguments that rebuild this env's task (``HRWritingEnv(**settings)``);
        a trained run stores them beside its model so generation uses the same writer dynamics."""
        task = (
            {"targets": [t.tolist() for t in self.targets]}
            if self.observe_target
            else {"target_hrv": self.targets[0].tolist()}
        )
        return {
            **task,
            "max_episode_steps": self.max_episode_steps,
            "prompts": list(self.prompts),
            "action_scale": self.action_scale,
            "calibration_seed": self.calibration_seed,
            "similarity_method": self.similarity_method.value,
        }

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start from a draft written with the target as controls; ``options`` may fix ``prompt`` or
        ``target_hrv``."""
        if seed is None and self._initial_seed is not None:
            seed, self._initial_seed = self._initial_seed, None
        super().reset(seed=seed)
        options = options or {}
        prompt = validate_prompt(options["prompt"]) if "prompt" in options else self._choice(self.prompts)
        if "target_hrv" in options:
            target = _resolve_target_item(options["target_hrv"], None)
        else:
            target = self._choice(self.targets)
        self._episode = episode = _Episode(prompt, target, self._outline(prompt))
        pool = self._first_drafts.setdefault((prompt, tuple(target)), [])
        if pool and len(pool) == self.draft_pool_size:
            episode.text, episode.measured, episode.score = self._choice(pool)
            episode.controls = episode.target.copy()
        else:
            self._write(np.zeros(HRV_DIM))
            if len(pool) < self.draft_pool_size:
                pool.append((episode.text, episode.measured, episode.score))
        return self._observation(), self._info()

    def step(self, action):
        if self._episode is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        move = np.clip(np.asarray(action, dtype=np.float64).reshape(HRV_DIM), -1.0, 1.0)
        if not np.all(np.isfinite(move)):
            raise ValidationError(f"action must be 8 finite numbers in [-1, 1], got {action!r}")
        self._episode.steps += 1
        reward = self._write(move)
        terminated = (
            self._episode.steps >= self.max_episode_steps
        )  # the revision budget is spent: the draft is final
        return self._observation(), reward, terminated, False, self._info()

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._episode is None:
            return None
        episode = self._episode
        rows = [
            f"prompt: {episode.prompt}  step {episode.steps}  reward {episode.score.reward:.3f}"
            f"  (resonance {episode.score.resonance:.3f}, fluency {episode.score.fluency:.3f},"
            f" coherence {episode.score.coherence:.3f}, topic {episode.score.topic:.3f})",
            episode.text,
            "",
        ]
        rows.append(f"{'dimension':<22}{'target':>8}{'measured':>10}{'control':>9}")
        for name, target, measured, control in zip(
            HRV_DIMENSIONS, episode.target, episode.measured, episode.controls
        ):
            rows.append(f"{name:<22}{target:>8.3f}{measured:>10.3f}{control:>9.3f}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ internals
    def _choice(self, items: Sequence[Any]) -> Any:
        return items[int(self.np_random.integers(len(items)))]

    def _outline(self, prompt: str) -> Outline:
        outline = self._outlines.get(prompt)
        if outline is None:
            outlines, _ = self.writer.planner.plan_paragraphs(prompt, 1, self.targets[0].tolist())
            outline = self._outlines[prompt] = outlines[0]
        return outline

    def _write(self, adjustment: np.ndarray) -> float:
        """Write a paragraph with the adjusted controls, measure it, and return the step's reward."""
        episode = self._episode
        episode.controls = episode.target + self.action_scale * adjustment
        drafted = np.clip(episode.controls + self.knob_offsets, 0.0, 1.0)
        seed = int(self.np_random.integers(2**31))
        sentences = self.writer.sentence_layer.generate_sentences(
            episode.outline, drafted.tolist(), seed=seed
        )
        episode.text = " ".join(sentences)
        episode.measured = np.asarray(self.writer.extractor.extract(episode.text))
        episode.score = self.writing_reward.score(
            episode.text, episode.target, prompt=episode.prompt, hrv=episode.measured
        )
        if self.reward_model is None:
            return episode.score.reward
        score = float(self.reward_model.predict(episode.text, episode.target.tolist()))
        if not np.isfinite(score):
            raise ValidationError(f"reward_model.predict returned {score}; it must return a number in [0, 1]")
        w = self.reward_model_weight
        return (1.0 - w) * episode.score.reward + w * float(np.clip(score, 0.0, 1.0))

    def _observation(self) -> np.ndarray:
        episode = self._episode
        parts = [episode.measured, episode.target] if self.observe_target else [episode.measured]
        return np.concatenate(parts).astype(np.float32)

    def _info(self) -> dict[str, Any]:
        episode = self._episode
        return {
            "prompt": episode.prompt,
            "text": episode.text,
            "measured_hrv": episode.measured.tolist(),
            "target_hrv": episode.target.tolist(),
            "controls": episode.controls.tolist(),
            **{term: getattr(episode.score, term) for term in REWARD_TERMS},
        }


ENV_ID = "resonance_os/HRWriting-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:HRWritingEnv")


def hr_ppo_config(
    config: PPOConfig | dict[str, Any] | None = None, seed: int | None = None
) -> dict[str, Any]:
    """The spec's training configuration and HRV network, updated by ``config`` (a PPOConfig or a dict)."""
    settings: dict[str, Any] = {"policy_kwargs": dict(HRV_POLICY_KWARGS)}
    if isinstance(config, PPOConfig):
        settings.update(json.loads(config.to_json()))
    elif config is not None:
        settings.update(PPOConfig.from_dict({**settings, **dict(config)}).__dict__)
    if seed is not None:
        settings["seed"] = seed
    return settings


def train_hr_ppo(
    env: gym.Env,
    timesteps: int = 5000,
    config: PPOConfig | dict[str, Any] | None = None,
    seed: int | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    progress_bar: bool = True,
) -> PPO:
    """Train PPO with the spec's configuration (lr 3e-4, batch 64, n_steps 2048, gamma 0.99, GAE 0.95,
    clip 0.2, entropy 0.01, value 0.5, grad-norm 0.5, 10 epochs) and HRV network on ``env``.

    Returns the trained model; metrics go to ``log_dir/metrics.jsonl`` when ``log_dir`` is given.
    """
    if not isinstance(timesteps, int) or timesteps < 1:
        raise ValidationError(f"timesteps must be a positive integer, got {timesteps!r}")
    model = PPO("MlpPolicy", env, log_dir=log_dir, **hr_ppo_config(config, seed))
    model.learn(timesteps, progress_bar=progress_bar)
    return model


def evaluate_writing_policy(
    env: HRWritingEnv, policy: PPO | str, episodes: int = 20, seed: int = 0
) -> dict[str, float]:
    """Mean and std of the per-step reward over ``episodes`` seeded episodes, and the mean per-step
    ``resonance`` (the reward's style term alone).

    ``policy`` is a trained model (deterministic actions), ``"random"`` (uniform actions) or
    ``"zero"`` (no adjustment: the knobs stay at the target, so the miscalibrated writer misses it).
    """
    rng = np.random.default_rng(seed)
    per_episode, resonance = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        rewards, done = [], False
        while not done:
            if policy == "random":
                action = rng.uniform(-1.0, 1.0, HRV_DIM)
            elif policy == "zero":
                action = np.zeros(HRV_DIM)
            else:
                action, _ = policy.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
            resonance.append(info["resonance"])
            done = terminated or truncated
        per_episode.append(float(np.mean(rewards)))
    return {
        "mean": float(np.mean(per_episode)),
        "std": float(np.std(per_episode)),
        "resonance": float(np.mean(resonance)),
    }
