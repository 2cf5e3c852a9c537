"""HRWritingEnv and train_hr_ppo: learn which edits make a language model's draft resonate.

>>> from resonance_os.evolution.hr_rl_trainer import HRWritingEnv, train_hr_ppo
>>> env = HRWritingEnv(hrv_dim=8)
>>> model = train_hr_ppo(env, timesteps=5000)  # doctest: +SKIP

The task (docs/hr_rl.md has the full design): an episode starts from a first draft the local
language model wrote (the shipped pool, ``evolution.draft_pool``) and a target profile. Each step is
one revision: the agent sets 8 edit intensities in [-1, 1], one per HRV dimension; intensity ``a``
asks for ``round(a * max_edits)`` edits that raise the dimension (lower it when negative), which the
writer applies where a sentence allows (``HumanResonantWriter.revise(..., edits=...)``: questions,
similes, hedges, voice, sentence splits, word swaps ...), unmeasured. Then the draft is measured and
scored with the writing reward (``quality.reward``: resonance with the target times fluency,
coherence, topic and no repetition). Edits move the style but can cost quality and interact, so the
policy has to learn which edits pay for which draft and target. The step's reward is the change in
the draft's score, so an episode's return is the final draft's score minus the first draft's.
"""

from __future__ import annotations

import inspect
import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIM, HRV_DIMENSIONS
from resonance_os.evolution.draft_pool import Draft, load_drafts
from resonance_os.generation.human_resonant_writer import HumanResonantWriter, Paragraph
from resonance_os.profiles.targets import resolve_target, resolve_target_item
from resonance_os.profiles.templates import BUILTIN_TEMPLATES
from resonance_os.quality.reward import REWARD_TERMS, WritingReward, make_reward, reward_kind
from resonance_os.rl.algorithms.ppo import PPO, PPOConfig
from resonance_os.rl.env_check import check_env_api
from resonance_os.rl.policies import HRV_POLICY_KWARGS
from resonance_os.similarity.metrics import SimilarityMethod, resolve_method

DEFAULT_MAX_EPISODE_STEPS = 3
DEFAULT_MAX_EDITS = 2
DEFAULT_REWARD_MODEL_WEIGHT = 0.5
LOG_STD_INIT = -0.5
"""Initial log std of the policy's Gaussian (std 0.61, not 1): with std 1 most samples clip to the
action bounds (+-max_edits edits on every dimension), so what PPO learns about the mean hardly shows
in the deterministic policy; measured on the train drafts at 5,000 steps."""
CONTROLS = ("edits", "steer")
"""What the action acts on: rule-based edits of a first draft, or the model's steering directions."""
STEER_ENVS = 32
"""Episodes ``train_hr_ppo`` writes in one batch on the steered task (one batched decode per step)."""
SPEC_ROLLOUT = 2048
"""The spec's ``n_steps``: env steps per PPO rollout, spread over the envs of a vectorised env."""
REVISION_CACHE_SIZE = 100_000
"""Revisions remembered per env: a revision is a deterministic function of (text, edits)."""
OBSERVATIONS = ("gap", "full")
"""What the policy sees: ``"gap"`` (default), the signed gap ``target - measured`` (8 floats in
[-1, 1]); ``"full"``, the measured HRV, the target and the share of revisions left (17 floats in
[0, 1], the observation of runs trained before the gap became the default)."""


def edit_counts(action: Sequence[float], max_edits: int) -> tuple[int, ...]:
    """The signed edit count per dimension for an action in [-1, 1]^8: ``round(a * max_edits)``."""
    move = np.clip(np.asarray(action, dtype=np.float64).reshape(HRV_DIM), -1.0, 1.0)
    if not np.all(np.isfinite(move)):
        raise ValidationError(f"action must be 8 finite numbers in [-1, 1], got {action!r}")
    return tuple(int(c) for c in np.rint(move * max_edits))


class RewardModel(Protocol):
    """What ``HRWritingEnv(reward_model=...)`` needs: a score in [0, 1] for a text and its target."""

    def predict(self, text: str, target_hrv: Sequence[float]) -> float: ...


@dataclass
class _Episode:
    draft: Draft
    target: np.ndarray
    paragraph: Paragraph
    value: float
    first_value: float
    edits: tuple[int, ...] = (0,) * HRV_DIM
    steps: int = 0


def _check_settings(
    hrv_dim: int,
    observation: str,
    max_episode_steps: int,
    max_edits: int,
    reward_model: RewardModel | None,
    reward_model_weight: float,
    seed: int | None,
    render_mode: str | None,
) -> None:
    """Refuse ``HRWritingEnv`` settings out of range, each with what it must be."""
    if hrv_dim != HRV_DIM:
        raise ValidationError(f"hrv_dim must be {HRV_DIM} (the HRV's dimensions), got {hrv_dim!r}")
    if observation not in OBSERVATIONS:
        raise ValidationError(f"observation must be one of {', '.join(OBSERVATIONS)}, got {observation!r}")
    if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) or max_episode_steps < 1:
        raise ValidationError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
    if isinstance(max_edits, bool) or not isinstance(max_edits, int) or not 1 <= max_edits <= 5:
        raise ValidationError(f"max_edits must be a whole number from 1 to 5, got {max_edits!r}")
    if not 0.0 <= reward_model_weight <= 1.0:
        raise ValidationError(f"reward_model_weight must be in [0, 1], got {reward_model_weight!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValidationError(f"seed must be a non-negative integer or None, got {seed!r}")
    if render_mode not in (None, "ansi"):
        raise ValidationError(f"render_mode must be None or 'ansi', got {render_mode!r}")
    if reward_model is not None and not callable(getattr(reward_model, "predict", None)):
        raise ValidationError("reward_model must have a predict(text, target_hrv) -> float method")


def _resolve_targets(
    target_hrv: Sequence[float] | None,
    profile: object,
    targets: Sequence[object] | None,
    store: str | os.PathLike[str] | None,
) -> list[np.ndarray]:
    """The env's targets: ``target_hrv`` or ``profile`` alone, else ``targets``, else the built-in
    profiles' vectors."""
    if targets is not None and (target_hrv is not None or profile is not None):
        raise ValidationError("give targets, or target_hrv/profile, not both")
    if target_hrv is not None or profile is not None:
        return [np.asarray(resolve_target(target_hrv, profile, store)[0])]
    items = targets if targets is not None else [p.vector.to_list() for p in BUILTIN_TEMPLATES.values()]
    resolved = [np.asarray(resolve_target_item(t, store)[0]) for t in items]
    if not resolved:
        raise ValidationError("targets must hold at least one HRV")
    return resolved


def _scoring_writer(
    writer: HumanResonantWriter | None, reward: str | WritingReward | None, similarity: SimilarityMethod
) -> HumanResonantWriter:
    """The writer whose ``revise`` applies the edits: ``writer``, which must score with ``reward``'s
    kind when one is given, or a built-in one scoring with ``reward`` and ``similarity``."""
    if writer is None:
        reward = make_reward(reward, similarity_method=similarity.value)
        return HumanResonantWriter(backend="builtin", reward=reward)
    if reward is not None and reward_kind(reward) != writer.reward.kind:
        raise ValidationError(
            f"reward={reward_kind(reward)!r} but the writer scores with its {writer.reward.kind!r} "
            "reward; give one of them"
        )
    return writer


class HRWritingEnv(gym.Env):
    """A gymnasium env in which a policy chooses the edits that revise a first draft toward a target.

    Args:
        hrv_dim: must be 8 (the HRV's dimensions); kept for the spec's ``HRWritingEnv(hrv_dim=8)``.
        target_hrv: one target (8 floats in [0, 1]); else ``profile`` (``"tenant/name"`` or an
            ``HRVProfile``); else ``targets``; else the built-in profiles, one drawn per episode.
        targets: several targets (HRVs or profile keys), one drawn per episode.
        drafts: first drafts: ``None`` (the shipped pool of SmolLM2 drafts), a pool file, or a
            sequence of ``(prompt, text)`` pairs.
        split: which pool drafts to use: ``"train"`` (default), ``"heldout"`` (for evaluation) or ``"all"``.
        max_episode_steps: revisions per episode; when they are spent the episode terminates. 3.
        max_edits: edits per dimension an action of +-1 asks for in one revision. 2.
        reward: the writing reward that scores drafts: ``"fast"`` (default) or ``"lm"``
            (``quality.reward.make_reward``; ``"lm"`` costs seconds a revision), or a ``WritingReward``;
            with ``writer``, the writer's reward (give none, or the same kind).
        reward_model: an object with ``predict(text, target_hrv) -> [0, 1]`` blended into the score.
        reward_model_weight: weight ``w``: ``score = (1-w) writing reward + w reward_model``. 0.5.
        similarity_method: how the reward's style term (resonance) is measured; ``manhattan``
            (1 - mean absolute gap) by default.
        writer: the ``HumanResonantWriter`` whose ``revise`` applies the edits (a built-in one if omitted).
        seed: seeds the first ``reset()`` when it gets no seed.
        render_mode: ``"ansi"`` returns the current draft and its HRV table as a string.
        store: profile store for ``"tenant/name"`` targets.
        observation: ``"gap"`` (default) or ``"full"`` (``OBSERVATIONS``).
        control: ``"edits"`` (this env) or ``"steer"`` (``CONTROLS``; see ``__new__``).

    Spaces: observation ``Box(-1, 1, (8,))``: the signed gap ``target - measured`` of each dimension
    (``observation="full"``: ``Box(0, 1, (17,))``, the measured HRV, the target and the share of
    revisions left); action ``Box(-1, 1, (8,))``: edit intensities. ``info`` carries ``text``,
    ``prompt``, ``measured_hrv``, ``target_hrv``, ``edits`` (applied), ``score`` (the draft's score
    the reward is the change of), ``first_score`` and the writing reward's terms ``resonance``,
    ``fluency``, ``coherence``, ``topic``, ``repetition`` and ``reward``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}
    control = "edits"

    def __new__(cls, *args: Any, control: str = "edits", **kwargs: Any):
        """``control="edits"`` (default) builds this env; ``control="steer"`` the steered task, in which
        the action steers the language model itself (``evolution.steered_writing.SteeredWritingEnv``,
        with its own arguments: ``targets``, ``split``, ``sentences``, ``max_strength``, ``seed`` ...)."""
        if control not in CONTROLS:
            raise ValidationError(f"control must be one of {', '.join(CONTROLS)}, got {control!r}")
        if control == "steer":
            from resonance_os.evolution.steered_writing import SteeredWritingEnv

            return SteeredWritingEnv(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        hrv_dim: int = HRV_DIM,
        target_hrv: Sequence[float] | None = None,
        profile: object = None,
        targets: Sequence[object] | None = None,
        drafts: str | os.PathLike[str] | Sequence[object] | None = None,
        split: str = "train",
        max_episode_steps: int = DEFAULT_MAX_EPISODE_STEPS,
        max_edits: int = DEFAULT_MAX_EDITS,
        reward: str | WritingReward | None = None,
        reward_model: RewardModel | None = None,
        reward_model_weight: float = DEFAULT_REWARD_MODEL_WEIGHT,
        similarity_method: SimilarityMethod | str = SimilarityMethod.MANHATTAN,
        writer: HumanResonantWriter | None = None,
        seed: int | None = None,
        render_mode: str | None = None,
        store: str | os.PathLike[str] | None = None,
        observation: str = "gap",
        control: str = "edits",
    ) -> None:
        _check_settings(
            hrv_dim,
            observation,
            max_episode_steps,
            max_edits,
            reward_model,
            reward_model_weight,
            seed,
            render_mode,
        )
        self.targets = _resolve_targets(target_hrv, profile, targets, store)
        self.drafts_source = drafts
        self.split = split
        self.drafts = load_drafts(drafts, split)
        self.hrv_dim = hrv_dim
        self.max_episode_steps = max_episode_steps
        self.max_edits = max_edits
        self.reward_model = reward_model
        self.reward_model_weight = float(reward_model_weight) if reward_model is not None else 0.0
        self.similarity_method = resolve_method(similarity_method)
        self.render_mode = render_mode
        self.observation = observation
        if observation == "gap":
            self.observation_space = gym.spaces.Box(-1.0, 1.0, (HRV_DIM,), dtype=np.float32)
        else:
            self.observation_space = gym.spaces.Box(0.0, 1.0, (2 * HRV_DIM + 1,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (HRV_DIM,), dtype=np.float32)
        self.writer = _scoring_writer(writer, reward, self.similarity_method)
        self._revisions: OrderedDict[tuple[str, tuple[float, ...], tuple[int, ...]], Paragraph] = (
            OrderedDict()
        )
        self._initial_seed = seed
        self._episode: _Episode | None = None

    @property
    def target_hrv(self) -> list[float]:
        """The current episode's target (the first target before any reset)."""
        return (self._episode.target if self._episode else self.targets[0]).tolist()

    @property
    def paragraph(self) -> Paragraph:
        """The current draft: text, writing score (with its measured HRV) and the edits applied."""
        if self._episode is None:
            raise gym.error.ResetNeeded("call reset() before reading the draft")
        return self._episode.paragraph

    def settings(self) -> dict[str, Any]:
        """The JSON-serialisable arguments that rebuild this env's task (``HRWritingEnv(**settings)``);
        a trained run stores them beside its model so generation revises as in training."""
        if self.drafts_source is not None and not isinstance(self.drafts_source, (str, os.PathLike)):
            drafts: object = [[d.prompt, d.text] for d in self.drafts]
        else:
            drafts = None if self.drafts_source is None else str(self.drafts_source)
        return {
            "targets": [t.tolist() for t in self.targets],
            "drafts": drafts,
            "split": self.split,
            "max_episode_steps": self.max_episode_steps,
            "max_edits": self.max_edits,
            "similarity_method": self.similarity_method.value,
            "observation": self.observation,
            "reward": self.writer.reward.kind,
        }

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start from a pool draft and a target; ``options`` may give ``draft`` (a ``Draft`` or a
        ``(prompt, text)`` pair) or ``target_hrv`` (an HRV or a profile key)."""
        if seed is None and self._initial_seed is not None:
            seed, self._initial_seed = self._initial_seed, None
        super().reset(seed=seed)
        options = options or {}
        draft = load_drafts([options["draft"]])[0] if "draft" in options else self._choice(self.drafts)
        if "target_hrv" in options:
            target = np.asarray(resolve_target_item(options["target_hrv"])[0])
        else:
            target = self._choice(self.targets)
        paragraph = self._revise(draft, target, draft.text, (0,) * HRV_DIM)
        value = self._value(paragraph, target)
        self._episode = _Episode(draft, target, paragraph, value, value)
        return self._observation(), self._info()

    def step(self, action):
        if self._episode is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        episode = self._episode
        episode.edits = edit_counts(action, self.max_edits)
        episode.steps += 1
        episode.paragraph = self._revise(episode.draft, episode.target, episode.paragraph.text, episode.edits)
        value = self._value(episode.paragraph, episode.target)
        reward, episode.value = value - episode.value, value
        terminated = episode.steps >= self.max_episode_steps  # the revision budget is spent
        return self._observation(), reward, terminated, False, self._info()

    def preview(self, action: Sequence[float]) -> float:
        """The draft's score after ``step(action)``, without taking the step: a planner's (or a search
        baseline's) lookahead. The revision is cached, so the ``step`` that follows costs nothing."""
        if self._episode is None:
            raise gym.error.ResetNeeded("call reset() before preview()")
        episode = self._episode
        edits = edit_counts(action, self.max_edits)
        return self._value(
            self._revise(episode.draft, episode.target, episode.paragraph.text, edits), episode.target
        )

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._episode is None:
            return None
        episode = self._episode
        score = episode.paragraph.score
        rows = [
            f"prompt: {episode.draft.prompt}  revision {episode.steps}/{self.max_episode_steps}"
            f"  score {episode.value:.3f} (first draft {episode.first_value:.3f}; resonance {score.resonance:.3f},"
            f" fluency {score.fluency:.3f}, coherence {score.coherence:.3f}, topic {score.topic:.3f})",
            episode.paragraph.text,
            "",
            f"{'dimension':<22}{'target':>8}{'measured':>10}{'edits':>7}",
        ]
        for name, target, measured, edits in zip(HRV_DIMENSIONS, episode.target, score.hrv, episode.edits):
            rows.append(f"{name:<22}{target:>8.3f}{measured:>10.3f}{edits:>+7d}")
        return "\n".join(rows)

    # ------------------------------------------------------------------ internals
    def _choice(self, items: Sequence[Any]) -> Any:
        return items[int(self.np_random.integers(len(items)))]

    def _revise(self, draft: Draft, target: np.ndarray, text: str, edits: tuple[int, ...]) -> Paragraph:
        """The writer's revision of ``text`` with ``edits`` (none: the text as it is), measured; cached,
        as it depends on nothing else (the edits' sentence choices are seeded by the text)."""
        key = (text, tuple(target), edits)
        paragraph = self._revisions.get(key)
        if paragraph is None:
            if any(edits):
                paragraph = self.writer.revise(
                    text, target, draft.prompt, edits=edits, seed=zlib.crc32(text.encode("utf-8"))
                )
            else:
                score = self.writer.reward.score(text, target, prompt=draft.prompt)
                paragraph = Paragraph(text, score, {"layer": "edits", "edits": []})
            self._revisions[key] = paragraph
            if len(self._revisions) > REVISION_CACHE_SIZE:
                self._revisions.popitem(last=False)
        return paragraph

    def _value(self, paragraph: Paragraph, target: np.ndarray) -> float:
        """The draft's score: the writing reward, blended with the reward model when there is one."""
        if self.reward_model is None:
            return paragraph.score.reward
        score = float(self.reward_model.predict(paragraph.text, target.tolist()))
        if not np.isfinite(score):
            raise ValidationError(f"reward_model.predict returned {score}; it must return a number in [0, 1]")
        w = self.reward_model_weight
        return (1.0 - w) * paragraph.score.reward + w * float(np.clip(score, 0.0, 1.0))

    def _observation(self) -> np.ndarray:
        episode = self._episode
        measured = np.asarray(episode.paragraph.score.hrv)
        if self.observation == "gap":
            return (episode.target - measured).astype(np.float32)
        left = (self.max_episode_steps - episode.steps) / self.max_episode_steps
        return np.concatenate([measured, episode.target, [left]]).astype(np.float32)

    def _info(self) -> dict[str, Any]:
        episode = self._episode
        score = episode.paragraph.score
        return {
            "prompt": episode.draft.prompt,
            "text": episode.paragraph.text,
            "measured_hrv": list(score.hrv),
            "target_hrv": episode.target.tolist(),
            "edits": list(episode.paragraph.trace.get("edits", [])),
            "score": episode.value,
            "first_score": episode.first_value,
            **{term: getattr(score, term) for term in REWARD_TERMS},
        }


HRWritingEnv.__signature__ = inspect.signature(HRWritingEnv.__init__).replace(
    parameters=list(inspect.signature(HRWritingEnv.__init__).parameters.values())[1:],
    return_annotation=inspect.Signature.empty,
)  # what help() and inspect show: the edits env's arguments, not __new__'s (*args, control, **kwargs)

ENV_ID = "resonance_os/HRWriting-v0"
if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=f"{__name__}:HRWritingEnv")


def hr_ppo_config(
    config: PPOConfig | dict[str, Any] | None = None, seed: int | None = None
) -> dict[str, Any]:
    """The spec's training configuration and HRV network, updated by ``config`` (a PPOConfig or a dict)."""
    settings: dict[str, Any] = {"policy_kwargs": {**HRV_POLICY_KWARGS, "log_std_init": LOG_STD_INIT}}
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
    Before training, a single env is reset and stepped once (``rl.env_check.check_env_api``), so an env
    with the old gym API or observations outside its space fails at once with a message saying so.
    Use the model as in Gymnasium: ``obs, info = env.reset(); action, _ = model.predict(obs)``.

    The steered task (``HRWritingEnv(control="steer")``) trains on ``STEER_ENVS`` episodes written in
    one batch; on any vector env the spec's rollout of 2048 steps is spread over its envs (``n_steps``
    = 2048 / envs) unless ``config`` sets ``n_steps``.
    """
    if isinstance(timesteps, bool) or not isinstance(timesteps, int) or timesteps < 1:
        raise ValidationError(f"timesteps must be a positive integer, got {timesteps!r}")
    if isinstance(env, gym.Env):
        check_env_api(env)
    if getattr(env, "control", None) == "steer":
        env = env.vectorised(STEER_ENVS, seed)
    settings = hr_ppo_config(config, seed)
    num_envs = getattr(env, "num_envs", 1)
    given = isinstance(config, PPOConfig) or (config is not None and "n_steps" in config)
    if num_envs > 1 and not given:
        settings["n_steps"] = max(1, SPEC_ROLLOUT // num_envs)
    model = PPO("MlpPolicy", env, log_dir=log_dir, **settings)
    model.learn(timesteps, progress_bar=progress_bar)
    return model


SPEC_INDICATORS = (
    # (label, metric, comparison, threshold): the spec's success indicators
    ("Reward > 0.7: high human resonance", "reward_per_step", ">", 0.7),
    ("Loss < 0.3: good convergence", "loss", "<", 0.3),
    ("Explained variance > 0.6: effective learning", "explained_variance", ">", 0.6),
)


def success_indicators(measured: dict[str, float | None]) -> list[tuple[str, float | None, bool]]:
    """``(label, value, met)`` for each of the spec's success indicators; ``measured`` maps
    ``reward_per_step`` (the trained policy's evaluated reward), ``loss`` and ``explained_variance``
    (the last update's) to values (``None``: not measured, not met)."""
    rows = []
    for label, key, op, threshold in SPEC_INDICATORS:
        value = measured.get(key)
        rows.append(
            (label, value, value is not None and (value > threshold if op == ">" else value < threshold))
        )
    return rows


FEEDBACK_GAIN = 5.0
"""Default gain of ``feedback_rule``: a gap of 0.1 asks for one edit (with ``max_edits`` 2)."""


def feedback_rule(gain: float = FEEDBACK_GAIN) -> Callable[[np.ndarray], np.ndarray]:
    """The one-step feedback baseline: edit intensities ``gain * (target - measured)`` from the
    observation (either of ``OBSERVATIONS``)."""

    def act(obs: np.ndarray) -> np.ndarray:
        gap = obs if len(obs) == HRV_DIM else obs[HRV_DIM : 2 * HRV_DIM] - obs[:HRV_DIM]
        return np.clip(gain * gap, -1.0, 1.0)

    return act


def evaluate_writing_policy(
    env: HRWritingEnv,
    policy: PPO | Callable[[np.ndarray], np.ndarray] | str,
    episodes: int = 20,
    seed: int = 0,
) -> dict[str, float]:
    """Mean and std of the final draft's score over ``episodes`` seeded episodes (the quantity an
    episode's return is the gain of), its mean ``resonance`` and quality factor, and the mean ``gain``
    over the first draft.

    ``policy`` is a trained model (deterministic actions), a function of the observation, or one of
    the non-learning baselines, each with the env's edit budget: ``"zero"`` (no edits), ``"random"``
    (uniform intensities), ``"feedback"`` (``feedback_rule()``) or ``"refiner"`` (the writer's own
    measure -> edit -> measure loop, ``HumanResonantWriter.revise``, allowed as many edit attempts
    as an episode allows edits: revisions x ``max_edits`` x 8).
    """
    rng = np.random.default_rng(seed)
    act = feedback_rule() if policy == "feedback" else policy
    finals, first, resonance, quality = [], [], [], []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        first.append(info["score"])
        if policy == "refiner":
            budget = env.max_episode_steps * env.max_edits * HRV_DIM
            paragraph = env.writer.revise(
                info["text"], env.target_hrv, info["prompt"], seed=seed + episode, max_steps=budget
            )
            final = env._value(paragraph, np.asarray(env.target_hrv))
        else:
            done = False
            while not done:
                if policy == "random":
                    action = rng.uniform(-1.0, 1.0, HRV_DIM)
                elif policy == "zero":
                    action = np.zeros(HRV_DIM)
                elif callable(act):
                    action = act(obs)
                else:
                    action, _ = act.predict(obs, deterministic=True)
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            paragraph, final = env.paragraph, info["score"]
        finals.append(final)
        resonance.append(paragraph.score.resonance)
        quality.append(paragraph.score.quality)
    return {
        "mean": float(np.mean(finals)),
        "std": float(np.std(finals)),
        "resonance": float(np.mean(resonance)),
        "quality": float(np.mean(quality)),
        "gain": float(np.mean(finals) - np.mean(first)),
    }
