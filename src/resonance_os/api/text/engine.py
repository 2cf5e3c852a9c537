"""The service's CPU-bound text work in one place: measuring, scoring, writing and refining.

:class:`TextEngine` builds its components (extractor, similarity, rewards, writers) once, on first use,
and exposes the calls the service makes with plain arguments and picklable results, so the same
calls run in the server process or in a text worker process (:mod:`resonance_os.api.text.workers`).
The writing calls take ``between``, called before every paragraph after the first (where a service
passes the writer to another tenant). Scoring and writing take the writing reward a request chose
(``"fast"`` or ``"lm"``, checked by :func:`~resonance_os.api.text.rewards.check_reward` where the
request arrived); the ``lm`` reward, and the writer that judges with it, are built in a process only
when a request first asks for them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from resonance_os.core.hrv_constants import HRV_DIMENSIONS


def as_dict(values: Sequence[float]) -> dict[str, float]:
    return dict(zip(HRV_DIMENSIONS, (float(v) for v in values)))


class TextEngine:
    """Extractor, similarity, rewards and writers, built once per process (see the module docstring)."""

    def __init__(self) -> None:
        self._rewards: dict[str, Any] = {}
        self._writers: dict[str, Any] = {}
        self._building = threading.Lock()

    @cached_property
    def extractor(self):
        from resonance_os.profiling.hrv_extractor import HRVExtractor

        return HRVExtractor()

    @cached_property
    def similarity(self):
        from resonance_os.similarity.metrics import SimilarityCalculator

        return SimilarityCalculator()

    @property
    def reward(self):
        """The default writing reward (``fast``)."""
        return self.reward_for(None)

    @cached_property
    def writer(self):
        """The writer, judging with the default reward."""
        from resonance_os.generation.human_resonant_writer import HumanResonantWriter

        return HumanResonantWriter(extractor=self.extractor, reward=self.reward)

    def reward_for(self, kind: str | None):
        """The writing reward ``kind`` (``quality.reward.make_reward``; None: the default), built once."""
        from resonance_os.quality.reward import DEFAULT_REWARD, make_reward

        kind = kind or DEFAULT_REWARD
        with self._building:
            if kind not in self._rewards:
                self._rewards[kind] = make_reward(kind, extractor=self.extractor)
            return self._rewards[kind]

    def writer_for(self, kind: str | None):
        """The writer judging drafts and edits with reward ``kind`` (None: the default): the same
        backend and loaded voice adapters as :attr:`writer` (``HumanResonantWriter.with_reward``)."""
        reward, writer = self.reward_for(kind), self.writer
        if reward is writer.reward:
            return writer
        with self._building:
            if reward.kind not in self._writers:
                self._writers[reward.kind] = writer.with_reward(reward)
            return self._writers[reward.kind]

    def warm(self) -> float:
        """Build every component now (a worker process does this before it takes work); returns the
        seconds its one-paragraph warm-up article took once the components were built (a first
        estimate of a paragraph's writing time, high: it loads what the writer loads on first use)."""
        self.writer, self.reward  # noqa: B018 (build them)
        started = time.perf_counter()
        self.write("warm up", [0.5] * len(HRV_DIMENSIONS), 1, 0)
        paragraph_s = time.perf_counter() - started
        self.score("Warm up the reward.", [0.5] * len(HRV_DIMENSIONS))
        return paragraph_s

    def analyze(self, text: str, evidence: bool = True) -> dict[str, Any]:
        """The HRV of ``text`` and, with ``evidence``, what was counted for each dimension."""
        analysis = self.extractor.analyze(text).to_dict()
        vector = [float(analysis["hrv"][d]) for d in HRV_DIMENSIONS]
        return {
            "hrv": as_dict(vector),
            "vector": vector,
            "n_words": analysis["n_words"],
            "n_sentences": analysis["n_sentences"],
            "evidence": analysis["evidence"] if evidence else None,
        }

    def measure(self, text: str, target_hrv: list[float] | None = None) -> tuple[list[float], float | None]:
        """The HRV of ``text`` and, with ``target_hrv``, its resonance (similarity) with the target."""
        hrv = [float(v) for v in self.extractor.extract(text)]
        resonance = None if target_hrv is None else self.similarity.calculate_similarity(hrv, target_hrv)
        return hrv, resonance

    def score(self, text: str, target: list[float], prompt: str | None = None, reward: str | None = None):
        """Writing reward ``reward`` (None: the default) of ``text`` toward ``target`` (a
        ``quality.reward.WritingScore``)."""
        return self.reward_for(reward).score(text, target, prompt=prompt)

    def write(
        self,
        prompt: str,
        target: list[float],
        paragraphs: int,
        seed: int | None,
        between: Callable[[], None] | None = None,
        *,
        target_source: str | None = None,
        adapter: str | bool = False,
        reward: str | None = None,
    ):
        """An article (``generation.Article``) of ``paragraphs`` paragraphs toward ``target``
        (from ``target_source``), drafted with the voice adapter in folder ``adapter`` (False: none;
        the service finds the folder, ``generation.voice_adapter.find_adapter``), its drafts chosen
        and its edits judged by writing reward ``reward`` (None: the default)."""
        return self.writer_for(reward).generate(
            prompt,
            target_hrv=target,
            num_paragraphs=paragraphs,
            seed=seed,
            between_paragraphs=between,
            target_source=target_source,
            adapter=adapter,
        )

    def refine(
        self,
        text: str,
        target: list[float],
        seed: int,
        between: Callable[[], None] | None = None,
        reward: str | None = None,
    ):
        """``text`` edited toward ``target`` (``generation.text_refine.RefinedText``), its edits judged
        and the text scored by writing reward ``reward`` (None: the default)."""
        from resonance_os.generation.text_refine import refine_text

        return refine_text(self.writer_for(reward), text, target, seed=seed, between_paragraphs=between)

    def steerable(self) -> dict[str, Any]:
        """Which dimensions the writer's model can be steered along, with their held-out figures
        (``api.text.steering.steerable_report``)."""
        from resonance_os.api.text.steering import steerable_report

        return steerable_report(self.writer)

    def steer(
        self, steer: dict[str, float], paragraph: str | None, topic: str | None, seed: int
    ) -> dict[str, Any]:
        """``paragraph`` (or a paragraph about ``topic``) written by the steered local model, measured
        (``api.text.steering.steered_rewrite``)."""
        from resonance_os.api.text.steering import steered_rewrite

        return steered_rewrite(self.writer, steer, paragraph=paragraph, topic=topic, seed=seed)
