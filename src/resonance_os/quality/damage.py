"""Damaged versions of real text, the negatives that quality terms are fitted and judged on.

Each function is seeded and returns a text that keeps the original's words but breaks one thing:

* ``word_salad``: every word of the paragraph in a random order (punctuation stays on its word);
* ``shuffle_within_sentences``: each sentence's words in a random order, its first letter capitalised
  and its closing punctuation kept at the end;
* ``shuffle_sentences``: the sentences in a random order that differs from the original.
"""

from __future__ import annotations

import random

from resonance_os.core.text import sentence_texts

_CLOSERS = ".!?\"')]"


def word_salad(text: str, seed: int = 0) -> str:
    """All words of ``text`` shuffled across the whole paragraph."""
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


def _shuffle_sentence(sentence: str, rng: random.Random) -> str:
    body = sentence.rstrip(_CLOSERS)
    closer = sentence[len(body) :]
    words = body.split()
    rng.shuffle(words)
    joined = " ".join(words)
    return joined[:1].upper() + joined[1:] + closer


def shuffle_within_sentences(text: str, seed: int = 0) -> str:
    """Each sentence's words shuffled in place; sentence order and closing punctuation kept."""
    rng = random.Random(seed)
    return " ".join(_shuffle_sentence(s, rng) for s in sentence_texts(text))


def shuffle_sentences(text: str, seed: int = 0) -> str | None:
    """The sentences in a random different order; ``None`` when there are fewer than two distinct
    orders (one sentence, or all sentences identical)."""
    sentences = sentence_texts(text)
    if len(set(sentences)) < 2:
        return None
    rng = random.Random(seed)
    order = list(range(len(sentences)))
    while order == sorted(order) or [sentences[i] for i in order] == sentences:
        rng.shuffle(order)
    return " ".join(sentences[i] for i in order)
