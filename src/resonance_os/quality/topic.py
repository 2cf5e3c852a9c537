"""Topic: is the text about the prompt, or does it only drop the prompt's words into generic sentences?

With ``P`` the content-word stems of the prompt and ``S_i`` those of sentence ``i`` (``text_units``):

    mention   = share of the text's stretches of MENTION_STRETCH content stems (consecutive, across
                sentence ends; the text's stems cut into equal parts of about that many) that hold a
                stem of P, saturating at MENTION_FULL: min(1, share / MENTION_FULL). Stretches, not
                sentences, so that punctuation does not change it: splitting "The bakery opened in
                1990, and the street has changed since." in two said no less about the bakery, but
                halved a sentence share's credit for it
    related   = cosine(v(P), v(text minus P)), where v(.) is the mean word vector (PPMI-SVD over the
                training prose, ``scripts/train_topic_vectors.py``) of the stems that have one, and
                "text minus P" are the text's content stems that are not prompt stems: what the
                sentences say *around* the prompt's words
    topic     = MENTION_WEIGHT * mention + (1 - MENTION_WEIGHT) * ramp(related)

``ramp`` maps a cosine of RELATED_ZERO or less to 0 and RELATED_FULL or more to 1 (linear between):
set by hand, not fitted. On held-out real paragraphs the cosine between a paragraph's three key
words and the rest of it has a median of 0.43; the same key words against an unrelated paragraph,
0.27. When the prompt or the text has no stem with a
vector (an out-of-vocabulary prompt such as "electric bikes"), ``related`` cannot be measured and
``topic = mention``. The vectors know only the words of the training prose (about 5,000 stems): a
prompt about a subject that prose never discusses is judged by its mentions alone.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from importlib import resources

import numpy as np

from resonance_os.core.text import Sentence, split_sentences
from resonance_os.quality.text_units import content_stems, sentence_words

MENTION_FULL = 0.5
MENTION_STRETCH = 8
"""Content stems per stretch of the mention share: one sentence of real prose on average (8.3 content
stems, 17.5 words in the pydoc training paragraphs; SmolLM2's drafts 11.7 and 24.8)."""
MENTION_WEIGHT = 0.5
RELATED_ZERO = 0.1
RELATED_FULL = 0.45
VECTORS_FILE = "topic_vectors.npz"
PROMPT_CACHE_SIZE = 4096


class TopicModel:
    """Scores how much a text is about a prompt (see the module docstring for the formula)."""

    def __init__(self, words: list[str], vectors: np.ndarray) -> None:
        self._index = {w: i for i, w in enumerate(words)}
        self._vectors = vectors.astype(np.float32)
        self._prompts: dict[str, tuple[frozenset[str], np.ndarray | None]] = {}

    def mean_vector(self, stems: list[str] | frozenset[str]) -> np.ndarray | None:
        """The unit-length mean word vector of ``stems`` (those with a vector); ``None`` if none has one."""
        rows = [self._index[s] for s in stems if s in self._index]
        if not rows:
            return None
        mean = np.add.reduce(self._vectors[rows], axis=0) / len(rows)  # ndarray.mean, without its overhead
        norm = float(np.sqrt(mean @ mean))
        return mean / norm if norm > 0 else None

    def vector_sum(self, stems: list[str] | frozenset[str]) -> np.ndarray | None:
        """The sum of the word vectors of ``stems`` (those with one; float32); ``None`` if none has one
        or they cancel out. Its direction is :meth:`mean_vector`'s, for a fraction of the cost."""
        rows = [self._index[s] for s in stems if s in self._index]
        if not rows:
            return None
        total = np.add.reduce(self._vectors[rows], axis=0)
        return total if total.any() else None

    def parts(
        self, text: str, prompt: str, sentences: list[Sentence] | None = None
    ) -> tuple[float, float | None]:
        """``(mention, related)`` before the blend; ``related`` is ``None`` when the prompt or the
        text around it has no stem with a vector. ``sentences``: ``split_sentences(text)`` when the
        caller already has it."""
        split = split_sentences(text) if sentences is None else sentences
        return self._parts([content_stems(s.lowers) for s in split], prompt)

    def _parts(
        self, stems: list[list[str]], prompt: str, text_sum: tuple[Counter[str], np.ndarray] | None = None
    ) -> tuple[float, float | None]:
        prompt_stems, p = self._prompt(prompt)
        if not prompt_stems or not stems:
            return 0.0, None
        flat = [s for sentence in stems for s in sentence]
        share = _mention_share(flat, prompt_stems)
        if text_sum is None:
            t = self.mean_vector([s for s in flat if s not in prompt_stems])
        else:  # many prompts against one text: from the text's vector sum (equal to 1e-7)
            t = self._around_vector(text_sum, prompt_stems)
        return min(1.0, share / MENTION_FULL), (None if p is None or t is None else float(p @ t))

    def _vector_sum(self, stems: list[list[str]]) -> tuple[Counter[str], np.ndarray]:
        """How often each stem with a vector occurs in the text, and the sum of their vectors."""
        counts = Counter(s for sentence in stems for s in sentence if s in self._index)
        rows = [self._index[s] for s in counts.elements()]
        return counts, self._vectors[rows].sum(axis=0, dtype=np.float64)

    def _around_vector(
        self, text_sum: tuple[Counter[str], np.ndarray], prompt_stems: frozenset[str]
    ) -> np.ndarray | None:
        """``mean_vector`` of the text's stem occurrences that are not prompt stems, from the text's
        sum (one sum serves every prompt ``score_many`` asks about)."""
        counts, total = text_sum
        n = sum(counts.values())
        for s in prompt_stems.intersection(counts):
            total = total - counts[s] * self._vectors[self._index[s]]
            n -= counts[s]
        if n == 0:
            return None
        norm = float(np.linalg.norm(total))
        return (total / norm).astype(np.float32) if norm > 1e-9 * n else None

    def _prompt(self, prompt: str) -> tuple[frozenset[str], np.ndarray | None]:
        """The prompt's content stems and their mean vector, kept per prompt (an RL run asks about a
        handful of prompts thousands of times)."""
        known = self._prompts.get(prompt)
        if known is None:
            if len(self._prompts) >= PROMPT_CACHE_SIZE:
                self._prompts.clear()
            stems = frozenset(content_stems([w for words in sentence_words(prompt) for w in words]))
            known = self._prompts[prompt] = (stems, self.mean_vector(sorted(stems)))
        return known

    def score(self, text: str, prompt: str, sentences: list[Sentence] | None = None) -> float:
        """Topic score in [0, 1]; 0 for a text without words or a prompt without content words."""
        return self._blend(*self.parts(text, prompt, sentences))

    def score_many(self, text: str, prompts: list[str]) -> list[float]:
        """``score(text, prompt)`` for each of ``prompts``, reading the text once."""
        stems = [content_stems(s.lowers) for s in split_sentences(text)]
        text_sum = self._vector_sum(stems)
        return [self._blend(*self._parts(stems, prompt, text_sum)) for prompt in prompts]

    @staticmethod
    def _blend(mention: float, related: float | None) -> float:
        if related is None:
            return mention
        ramp = min(1.0, max(0.0, (related - RELATED_ZERO) / (RELATED_FULL - RELATED_ZERO)))
        return MENTION_WEIGHT * mention + (1.0 - MENTION_WEIGHT) * ramp


def _mention_share(stems: list[str], prompt_stems: frozenset[str]) -> float:
    """The share of ``stems``' stretches (about ``MENTION_STRETCH`` consecutive stems each, equal parts)
    that hold a prompt stem; 0 for no stems."""
    if not stems:
        return 0.0
    parts = max(1, round(len(stems) / MENTION_STRETCH))
    bounds = [round(k * len(stems) / parts) for k in range(parts + 1)]
    held = sum(not prompt_stems.isdisjoint(stems[a:b]) for a, b in zip(bounds, bounds[1:]))
    return held / parts


@cache
def topic_model() -> TopicModel:
    """The shipped topic model (vectors under ``quality/data``), loaded once per process."""
    with resources.files("resonance_os.quality").joinpath(f"data/{VECTORS_FILE}").open("rb") as handle:
        data = np.load(handle)
        return TopicModel([str(w) for w in data["words"]], data["vectors"])
