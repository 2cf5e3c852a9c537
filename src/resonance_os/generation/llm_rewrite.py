"""Sentence rewrites by a chat model: the edit that reaches what the rule operators cannot.

The refiner's rule edits keep meaning but find few sentences they apply to in a model's prose (its
upbeat, eventful, active sentences stay so), and re-sampling whole paragraphs with advice barely
moves the gap. ``rewrite_sentences`` asks the model to rewrite one sentence at a time instead:

1. pick the sentence whose removal would bring the paragraph's HRV closest to the target (the one
   most out of style), among those not tried yet;
2. ask for ``candidates`` rewrites in one batch, with plain advice for the two largest gaps
   (``llm_writing.GAP_ADVICE``; sentence length is left to the refiner's splits and merges);
3. keep a rewrite only if it reads as a rewrite of that sentence (``usable_rewrite``: one or two
   sentences, no talk about the instruction, a quarter of the original's content words, not far
   longer, no subject the paragraph never mentioned), if
   the ``judge`` (mean log-likelihood per token under a language model, e.g.
   ``quality.fluency.LMFluency.loglik_many``) rates it at most ``MAX_LOGLIK_DROP`` below the
   original, and if, put in place, it lowers the paragraph's mean |gap| while the writing reward's
   quality factor stays within ``quality_tolerance`` of the draft's; the closest such paragraph wins.

The judge is there because choosing among many rewrites by the fast reward finds its blind spots:
on training drafts it accepted 'Embarrosa: "I have heard of Lena ..." Add-in: "la la femme" ...'
(quality 0.18 -> 0.28), which SmolLM2 rates 2.1 nats per token below the sentence it replaced
(usable rewrites fell 0.2-0.6). ``rounds`` model calls at most, none once the paragraph is within
``tolerance``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from resonance_os.core.hrv_types import mean_gap
from resonance_os.core.text import sentence_texts, split_sentences
from resonance_os.generation.backends.base import ChatBackend
from resonance_os.generation.edits import DETERMINERS
from resonance_os.generation.llm_writing import clean_reply, gap_advice
from resonance_os.profiling.lexicons import CLASS_ADJECTIVE, CLASS_NOUN, get_lexicon
from resonance_os.quality.text_units import content_stems, stem

if TYPE_CHECKING:
    from resonance_os.quality.reward import WritingReward

REWRITE_SYSTEM_PROMPT = "You rewrite sentences. Reply with the rewritten sentence only."
ADVICE_COUNT = 2
"""Gaps turned into advice per rewrite: a small model follows one or two."""
INSTRUCTION_WORDS = frozenset(
    "sentence sentences rewrite rewrites rewritten rephrase rephrased reworded version tense tenses "
    "clause clauses passive simile metaphor grammar grammatical grammatically user original".split()
)
"""Words of the request itself: a rewrite that brings one in that the original lacked talks about
the task ("This rephrased version uses the past perfect tense ...") instead of doing it."""
MIN_SHARED_CONTENT = 0.25
"""Share of the original's content words a rewrite must keep: below it the model wrote about
something else ("As someone who understands urban agriculture ..." became "I was once an expert on
sustainable transportation systems ...")."""
MAX_GROWTH = 2.0
"""A rewrite may have at most this many times the original's words (plus ``GROWTH_SLACK``)."""
GROWTH_SLACK = 8
REWRITE_MAX_TOKENS = 64
"""Reply limit of a rewrite call: one or two sentences (a paragraph's limit would cost twice the time)."""
MAX_LOGLIK_DROP = 0.75
"""How far (nats per token) the judge may rate a rewrite below the sentence it replaces."""
WORDING_TALK = re.compile(
    r"\b(?:instead of (?:saying|writing|using)|you (?:could|can|might|may) (?:simply |just )?(?:say|write|use)"
    r"|an example of (?:using|how to))\b",
    re.IGNORECASE,
)
"""Advice about the wording addressed to the reader, not a rewrite: 'This is an example of using "I"
instead of "you," ... you could simply say "back then."' (kept by the previous build)."""
_QUOTE = re.compile(r"[\"“”]")
_WORD = re.compile(r"[a-z']+")
_NAME_OR_NUMBER = re.compile(r"(?<![\w'])(?:[A-Z][\w'-]*|\d[\d.,]*)")


_PERSON_PRONOUNS = {"he": frozenset(("he", "him", "his")), "she": frozenset(("she", "her", "hers"))}


def _opens_with_new_subject(sentences: Sequence[Sequence[str]], known: set[str]) -> bool:
    """Whether one of ``sentences`` (lower-cased words) brings in a new subject: "he" or "she"
    where ``known`` (words and content stems of the original and its paragraph) has no such person,
    or a noun phrase starting with a determiner with no noun whose stem is known. Each changed what
    the sentence is about: "By doing so, they have ... restored their livelihood" became "The
    company has made a positive impact ...", "The process was designed ..." became "This product
    offers ...", "It also helps in setting goals ..." became "She has proven herself ..."."""
    classes = get_lexicon().word_classes
    for words in sentences:
        if words and words[0] in _PERSON_PRONOUNS and not _PERSON_PRONOUNS[words[0]] & known:
            return True
        if len(words) < 2 or words[0] not in DETERMINERS:
            continue
        phrase = []
        for word in (w.removesuffix("'s") for w in words[1:4]):
            if not (word.isalpha() and classes.get(word, 0) & (CLASS_NOUN | CLASS_ADJECTIVE)):
                break
            phrase.append(word)
        nouns = [w for w in phrase if classes.get(w, 0) & CLASS_NOUN]
        if nouns and not any(stem(w) in known for w in nouns):
            return True
    return False


def _names_and_numbers(text: str) -> set[str]:
    """Capitalised words not at the very start of a sentence, and numbers: names, acronyms, figures."""
    found: set[str] = set()
    for piece in sentence_texts(text):
        for match in _NAME_OR_NUMBER.finditer(piece):
            if match.start() > 0 and match.group(0) not in ("I", "I'm", "I've", "I'd", "I'll"):
                found.add(match.group(0).rstrip(".,").lower())
    return found


@dataclass
class RewriteLog:
    """What the rewrites did to one paragraph: each model call's sentence index, how many of its
    replies were usable and whether one was kept (``calls``), and each kept rewrite as
    ``(before, after)`` (``kept``)."""

    calls: list[dict[str, object]] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)


def rewrite_advice(
    target: Sequence[float], measured: Sequence[float], count: int = ADVICE_COUNT
) -> list[str]:
    """``llm_writing.gap_advice`` for the ``count`` largest gaps, sentence length excepted (a rewrite
    of one sentence is the wrong tool for the spread of sentence lengths)."""
    return gap_advice(target, measured, count, exclude=("sentence_variance",))


def rewrite_messages(sentence: str, advice: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one rewrite of ``sentence`` that follows ``advice``."""
    notes = " ".join(f"{a[0].upper()}{a[1:]}." for a in advice)
    return [
        {"role": "system", "content": REWRITE_SYSTEM_PROMPT},
        {"role": "user", "content": f"Rewrite this sentence. {notes}\n\n{sentence}"},
    ]


def usable_rewrite(original: str, reply: str, context: str = "") -> str:
    """The rewrite in ``reply`` (cleaned by ``clean_reply``), or ``""`` when it is not a rewrite of
    ``original``: empty, more than two sentences, longer than ``MAX_GROWTH`` times the original's
    distinct words (plus ``GROWTH_SLACK``), keeping less
    than ``MIN_SHARED_CONTENT`` of its content words, talking about wording (``WORDING_TALK``),
    bringing in quotation marks, one of ``INSTRUCTION_WORDS`` or a name, acronym or number the
    original lacks (a rewrite restyles, it adds no facts: "One such institution is the Library of
    Congress" became "The Library of Congress (LCOD) ... operated at the National Archives"), or
    opening a sentence with a noun phrase about something neither the original nor ``context`` (the
    paragraph, the prompt) names (``_opens_with_new_subject``)."""
    text = clean_reply(reply)
    sentences = split_sentences(text)
    if not sentences or len(sentences) > 2:
        return ""
    if WORDING_TALK.search(text) or len(_QUOTE.findall(text)) > len(_QUOTE.findall(original)):
        return ""
    old = set(_WORD.findall(original.lower()))
    new_words = [w for s in sentences for w in s.lowers]
    if len(new_words) > MAX_GROWTH * len(old) + GROWTH_SLACK:
        return ""
    if any(w in INSTRUCTION_WORDS and w not in old for w in new_words):
        return ""
    if _names_and_numbers(text) - old - _names_and_numbers(original):
        return ""
    kept = set(content_stems(sorted(old)))
    if not kept or len(kept & set(content_stems(new_words))) < MIN_SHARED_CONTENT * len(kept):
        return ""
    known_words = _WORD.findall(f"{original} {context}".lower())
    if _opens_with_new_subject([s.lowers for s in sentences], {*known_words, *content_stems(known_words)}):
        return ""
    return text


def _gap_without(
    reward: WritingReward, pieces: list[str], index: int, target: Sequence[float], prompt: str
) -> float:
    """Mean |gap| of the paragraph without sentence ``index``."""
    rest = " ".join(pieces[:index] + pieces[index + 1 :])
    return mean_gap(target, reward.score(rest, target, prompt=prompt).hrv)


def rewrite_sentences(
    backend: ChatBackend,
    reward: WritingReward,
    judge: Callable[[list[str]], list[float | None]],
    text: str,
    target: Sequence[float],
    prompt: str,
    previous: Sequence[str] = (),
    rounds: int = 2,
    candidates: int = 6,
    tolerance: float = 0.0,
    quality_tolerance: float = 0.02,
    seed: int | None = None,
) -> tuple[str, RewriteLog]:
    """(``text`` with up to ``rounds`` sentences rewritten toward ``target``, log); see the module
    docstring. ``judge`` maps sentences to their mean log-likelihood per token (``None`` without
    words); ``previous`` paragraphs are the article's earlier ones (the reward's copy check)."""
    log = RewriteLog()
    pieces = sentence_texts(text)
    current = reward.score(text, target, prompt=prompt, context=previous)
    floor = current.quality - quality_tolerance
    context = " ".join([prompt, *previous, text])
    tried: set[str] = set()
    for round_index in range(rounds):
        error = mean_gap(target, current.hrv)
        open_pieces = [i for i, p in enumerate(pieces) if p not in tried]
        if error <= tolerance or len(pieces) < 2 or not open_pieces:
            break
        index = min(open_pieces, key=lambda i, pieces=pieces: _gap_without(reward, pieces, i, target, prompt))
        tried.add(pieces[index])
        messages = rewrite_messages(pieces[index], rewrite_advice(target, current.hrv))
        replies = backend.sample(
            messages, candidates, None if seed is None else seed + round_index, REWRITE_MAX_TOKENS
        )
        rewrites = list(
            dict.fromkeys(
                r for r in (usable_rewrite(pieces[index], reply, context) for reply in replies) if r
            )
        )
        if rewrites:
            original, *logliks = judge([pieces[index], *rewrites])
            rewrites = [
                r
                for r, ll in zip(rewrites, logliks)
                if ll is not None and original is not None and ll >= original - MAX_LOGLIK_DROP
            ]
        best = None
        for rewrite in rewrites:
            candidate = pieces[:index] + [rewrite] + pieces[index + 1 :]
            scored = reward.score(" ".join(candidate), target, prompt=prompt, context=previous)
            gap = mean_gap(target, scored.hrv)
            if gap < error - 1e-9 and scored.quality >= floor and (best is None or gap < best[0]):
                best = (gap, candidate, scored, rewrite)
        log.calls.append({"sentence": index, "usable": len(rewrites), "kept": best is not None})
        if best is not None:
            log.kept.append((pieces[index], best[3]))
            tried.add(best[3])
            pieces, current = best[1], best[2]
    return " ".join(pieces), log
