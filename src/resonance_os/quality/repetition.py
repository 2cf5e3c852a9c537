"""Repetition and copying: a penalty in [0, 1] (0 = clean) for text that repeats itself, copies its
prompt or context, or leaks meta-text.

With the text's word 3-grams ``G3`` and 4-grams ``G4`` (lower-cased words of the extractor's splitter):

    within  = ramp(1 - |set(G3)| / |G3|), 0 at REPEAT_FREE (5% repeated 3-grams) rising to 1 at
              REPEAT_FULL (45%; a text said twice
              over repeats just under half of its 3-grams)
    copied  = max over paragraphs p of ramp(share of p's 4-grams that occur in the other paragraphs,
              the prompt or ``context``), 0 at COPY_FREE (10%) rising to 1 at COPY_FULL (50%)
    meta    = 1 if any META_PATTERNS matches (an assistant's preamble, "revised paragraph", a metric
              name such as "emotional valence" or "HRV"), else 0
    repetition = max(within, copied, meta)

Real prose sits near 0: on 538 held-out corpus paragraphs the median is 0 and the 90th percentile
0.04 (jokes and verses that repeat a line score more). A paragraph that shares 20% of its 4-grams
with another paragraph of the article gets 0.25.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.text import Sentence, split_paragraphs, split_sentences
from resonance_os.quality.text_units import sentence_words, word_ngrams

REPEAT_FREE = 0.05
REPEAT_FULL = 0.45
COPY_FREE = 0.1
COPY_FULL = 0.5
_METRIC_NAMES = "|".join(name.replace("_", r"[ _]") for name in HRV_DIMENSIONS)
META_PATTERNS: tuple[tuple[tuple[str, ...], str], ...] = (
    # (anchors: lower-case strings one of which the match must contain, pattern); the anchors let
    # ordinary text skip the regular expressions, which cost more than all the other checks together
    (
        ("here is", "here's", "here are", "below is"),
        r"\b(?:here is|here's|here are|below is)\b[^.!?\n]{0,60}\b(?:paragraph|version|rewrite|revision|draft)s?\b",
    ),
    (
        ("revised", "rewritten", "improved", "polished", "edited", "rephrased", "reworded"),
        r"\b(?:revised|rewritten|improved|polished|edited|rephrased|reworded) (?:paragraph|sentence|version|text|draft)s?\b",
    ),
    (("i'll ", "i will ", "let me "), r"\b(?:i'll|i will|let me) (?:rephrase|rewrite|reword|revise)\b"),
    (("tense)",), r"\((?:in )?(?:the )?(?:present|past|future)[\w ]{0,20} tense\)"),
    (("suggested edit",), r"\bsuggested edits?\b"),
    (("as an ai",), r"\bas an ai\b"),
    (("i hope th",), r"\bi hope (?:this|that) helps\b"),
    (("let me know if",), r"\blet me know if\b"),
    (  # a chat assistant's offer ("I'm excited to help you fix your leaky roof!")
        (" to help", " to assist"),
        r"\b(?:i'm|i am|i'd be|i would be)\s+(?:so\s+|more than\s+)?(?:happy|glad|excited|delighted|thrilled)"
        r"\s+to\s+(?:help|assist)\b",
    ),
    (("i'll do my best to",), r"\bi'll do my best to (?:help|assist)\b"),
    (("can i help", "can i assist"), r"\b(?:how|what) can i (?:help|assist)(?: you)?\b"),
    (("feel free to",), r"\bfeel free to (?:ask|reach out)\b"),
    (  # the text describing itself ("This article focuses on ...", "The introduction provides context")
        ("article", "essay", "paragraph", "text", "passage", "introduction", "entry"),
        r"\b(?:this|the) (?:article|essay|paragraph|text|passage|introduction|entry)s? (?:is about|focuses on"
        r"|provides|describes|discusses|explores|explains|introduces|aims to|will)\b",
    ),
    (
        ("paragraph",),
        r"\bthe (?:first|second|third|next|last|final|following|previous) paragraphs?\b",
    ),
    (
        ("sentence",),
        r"\bthe (?:first|second|third|next|last|final|following|previous) sentences? (?:describes?|provides?"
        r"|introduces?|explains?|states?|gives?|lists?|sets?|shows?)\b",
    ),
    (("in this ",), r"\bin this (?:article|essay|paragraph)\b"),
    (
        ("sure", "certainly", "of course", "absolutely"),
        r"^[ \t]*(?:sure|certainly|of course|absolutely)[ \t]*[,!.:]",  # not \s*: across lines, quadratic
    ),
    (
        tuple(v for name in HRV_DIMENSIONS for v in (name, name.replace("_", " "))),
        rf"\b(?:{_METRIC_NAMES})\b",
    ),
    (("hrv",), r"\bhrv\b"),
    (("target ",), r"\btarget (?:profile|style|tone)\b"),
    (("word count", " words"), r"\b(?:word count|\d+ words)\b"),
)
_META = tuple((anchors, re.compile(p, re.IGNORECASE | re.MULTILINE)) for anchors, p in META_PATTERNS)


@dataclass(frozen=True)
class RepetitionReport:
    """The penalty and its parts; ``meta_text`` lists the leaked phrases found."""

    repetition: float
    within: float
    copied: float
    meta_text: list[str] = field(default_factory=list)


def _ramp(value: float, zero: float, full: float) -> float:
    return min(1.0, max(0.0, (value - zero) / (full - zero)))


def _words(text: str) -> list[str]:
    return [w for words in sentence_words(text) for w in words]


def meta_text(text: str) -> list[str]:
    """Phrases of ``text`` that talk about the writing instead of being it (see ``META_PATTERNS``)."""
    lower = text.lower()
    return [
        m.group(0).strip()
        for anchors, pattern in _META
        if any(anchor in lower for anchor in anchors)
        for m in pattern.finditer(text)
    ]


def repetition_report(
    text: str, prompt: str = "", context: Sequence[str] = (), sentences: list[Sentence] | None = None
) -> RepetitionReport:
    """Measure ``text`` (one paragraph or several separated by blank lines) against itself, the
    ``prompt`` and ``context`` (e.g. the article's earlier paragraphs, an outline). ``sentences``:
    ``split_sentences(text)`` when the caller already has it."""
    words = [w for s in (split_sentences(text) if sentences is None else sentences) for w in s.lowers]
    trigrams = word_ngrams(words, 3)
    within = _ramp(1.0 - len(set(trigrams)) / len(trigrams), REPEAT_FREE, REPEAT_FULL) if trigrams else 0.0
    paragraphs = split_paragraphs(text)
    outside = [set(word_ngrams(_words(piece), 4)) for piece in (prompt, *context) if piece.strip()]
    grams = (
        [word_ngrams(words, 4)] if len(paragraphs) == 1 else [word_ngrams(_words(p), 4) for p in paragraphs]
    )
    copied = 0.0
    for i, own in enumerate(grams):
        if not own:
            continue
        others = set().union(*outside, *(set(g) for j, g in enumerate(grams) if j != i))
        share = sum(g in others for g in own) / len(own)
        copied = max(copied, _ramp(share, COPY_FREE, COPY_FULL))
    leaked = meta_text(text)
    return RepetitionReport(max(within, copied, 1.0 if leaked else 0.0), within, copied, leaked)
