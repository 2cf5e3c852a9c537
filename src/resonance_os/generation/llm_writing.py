"""Writing with a chat model: short instructions, several sampled candidates, the best by the reward.

Prompts are written for a small model (SmolLM2-135M follows a few plain sentences, not a brief):
the paragraph's place in the outline (its role and focus topic, never the earlier paragraphs'
text, which a small model copies), advice for the ``STYLE_NOTES`` largest gaps between the target
and what the model writes anyway (``draft_instructions``), and a sentence count. No metric names
reach the model. ``write_paragraph`` asks the backend for ``candidates`` replies at once
(``backend.sample``: one engine batch for the local model, ``n=`` for a server), cleans
each (``clean_reply``: markdown, meta-text lines and sentences, sentences copied from the earlier
paragraphs, repeated sentences, an unfinished last sentence), scores the survivors with the
writing reward (prompt for the topic term, earlier paragraphs for the copy check) and keeps the
best. While the best misses its target by more than the tolerance (mean
|gap|), another batch is sampled with the largest gaps turned into plain advice ("ask a question").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lemminflect import getAllLemmas, getInflection

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.hrv_types import mean_gap
from resonance_os.core.text import split_sentences
from resonance_os.generation.backends.base import BackendError, ChatBackend
from resonance_os.generation.planner_layer import Outline
from resonance_os.generation.topics import model_brief
from resonance_os.quality.repetition import meta_text
from resonance_os.quality.text_units import word_ngrams

if TYPE_CHECKING:
    from resonance_os.quality.reward import WritingReward

SYSTEM_PROMPT = "You are a writer. Reply with one paragraph of plain prose and nothing else."
ROLE_TASKS: dict[str, str] = {
    "opening": "Write the opening paragraph of a short article about {prompt}. Introduce {focus}.",
    "development": "Write a middle paragraph of a short article about {prompt}. Give a concrete example about {focus}.",
    "close": "Write the closing paragraph of a short article about {prompt}. End with a clear thought on {focus}.",
}
STYLE_NOTES = 3
"""Style phrases per prompt (``draft_instructions``, ``gap_advice``): a small model follows three,
not four or eight."""
MODEL_TYPICAL_HRV = (0.28, 0.70, 0.23, 0.45, 0.04, 0.10, 0.36, 0.88)
"""What SmolLM2-135M-Instruct writes whatever its prompt asks for: the mean HRV of the shipped draft
pool's 200 training drafts (``evolution.draft_pool``, written toward all three built-in profiles).
Against real prose (``core.hrv_constants.TYPICAL_HRV`` medians) its sentence lengths are even (0.28 against 0.45) and its
tone warm (0.70 against 0.52), with more stories (0.36 against 0.18). A test recomputes it."""
MIN_SENTENCES = 2
"""A candidate of fewer sentences (the filters can leave one) is chosen only when no other survives:
a one-sentence paragraph reads as a stub (3 of 27 chosen paragraphs on the writer benchmark)."""
COPY_SHARE = 0.5
"""A sentence with at least this share of its word 4-grams in the earlier paragraphs is a copy."""
MAX_SENTENCE_WORDS = 50
"""Longer sentences are a small model's run-ons (clauses strung together without sense) and are dropped."""
OPENING_WORDS = 3
"""A candidate that opens with the same words as an earlier paragraph ("In today's digital age, ..."
twice) is chosen only when no other candidate survives."""
GAP_ADVICE: dict[str, tuple[str, str]] = {
    "sentence_variance": ("keep sentence lengths even", "mix very short sentences with long ones"),
    "emotional_valence": ("use more critical wording", "use warmer, more positive wording"),
    "emotional_intensity": ("use calmer, plainer wording", "use stronger, more vivid words"),
    "assertiveness_index": ("hedge with words like perhaps and may", "state claims firmly"),
    "curiosity_index": ("ask no questions", "ask a question"),
    "metaphor_density": ("stay literal, no comparisons", "add a simile with like or as if"),
    "storytelling_index": ("write in the present tense, no story", "tell a short story in the past tense"),
    "active_voice_ratio": ("use the passive voice once or twice", "use the active voice"),
}
"""Plain advice to lower (first) or raise (second) each dimension, in the words a writer would use."""

ASSISTANT_TALK = re.compile(
    r"\[[\w ]+\]|\b(?:here's|here is|here are|your requested|in this (?:paragraph|article)"
    r"|(?:the|this|your|original) (?:opening |closing |following |next )?(?:paragraph|sentence|prompt|instruction)s?"
    r"|I(?:'ve| have) (?:re)?written|I(?:'ll| will) (?:explore|discuss|examine|share)"
    r"|I(?:'m| am) (?:so |very )?(?:excited|happy|glad|thrilled|delighted|pleased) to (?:share|present|discuss|explore|write|tell)"
    r"|I hope (?:this|that|these|my|you)"
    r"|(?:this|the above|the following) (?:passage|essay|excerpt)"
    r"|(?:this|my) (?:article|piece|post|blog post) (?:will|seeks|aims|explores|discusses|examines|begins)"
    r"|(?:our|my|this) (?:creative|professional|technical) (?:writing|style|tone|voice)|writing comes into play"
    r"|similes?|like or as if|(?:past|present) tense|(?:passive|active) voice|sentence lengths?)\b",
    re.IGNORECASE,
)
"""Assistant talk a small model mixes into its prose ("Here's an example of how you can incorporate
your requested text", "This opening sentence sets the tone", "In the following paragraphs, I'll
explore", "[city_name]", "I'm excited to share my thoughts on", "I hope this changes your
perspective", "This passage begins by acknowledging", "This essay seeks to explore", "This is where
our creative writing comes into play") and the style advice echoed back ("A simile has been used to
describe a café culture, and I'm going to add one of my own", "mixed with the simile 'like or as if'
and the use of the past tense": HR-GRPO's policies learnt to write these; 5 of 17,869 real paragraphs
of the quality corpus and none of the pool's 351 drafts name these devices), beyond the reward's
meta-text patterns; a sentence with it is dropped."""
_HEADING = re.compile(
    r"^(?:[A-Z][\w'’-]*[ ,]+(?:(?:of|the|a|an|and|or|in|on|for|to|with|at|by) +)*){2,}[A-Z][\w'’-]*:"
)
"""A title run into the first sentence ("The Future of Public Libraries: Building on ..."): three or
more capitalised words (small words between them allowed) before a colon."""
_RUN_IN_LABEL = re.compile(r"^[A-Z][\w'’-]*(?: [\w'’-]+){0,2}: ")
"""A label of one to three words run into a sentence, a small model's list of writing techniques
("Sensory language: I saw a bee ...", "Here it goes: ...", "Good Sleep: What Every One Needs to Know")."""
_FINISHED = re.compile(r"[.!?][\"'\u201d)]*$")
"""How a finished sentence ends: its stop, then closing quotes or brackets ('... dubbed "' is not)."""
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
_LABEL = re.compile(
    r"^(?:paragraph|title|article|opening|closing|conclusion)\b[^:\n]{0,20}:\s*", re.IGNORECASE
)


def clean_reply(reply: str, previous: Sequence[str] = ()) -> str:
    """One paragraph of prose from a model reply, or ``""`` when nothing usable is left.

    Drops headings, markdown, bullets, labels ("Paragraph 2:"), lines ending in a colon (a preamble),
    every sentence with meta-text (``quality.repetition.meta_text``: "Here is the revised
    paragraph", metric names), ``ASSISTANT_TALK``, a title or label run into it (``_HEADING``,
    ``_RUN_IN_LABEL``) or no subject
    before its verb (``opens_without_subject``),
    sentences that copy the ``previous`` paragraphs (``COPY_SHARE`` of their 4-grams), repeat an
    earlier sentence, run on past ``MAX_SENTENCE_WORDS`` words or trail off in an ellipsis ("They
    were all alive and doing whatever they wanted..."), surrounding quotes, an unfinished last
    sentence (cut at the token limit) and quotation marks that open or close nothing.
    """
    lines = [re.sub(r"[*_`]", "", line).strip() for line in reply.splitlines() if not line.startswith("#")]
    lines = [_LABEL.sub("", _BULLET.sub("", line)) for line in lines if line and not line.endswith(":")]
    text = " ".join(lines)
    if len(text) > 1 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    seen = set().union(*(word_ngrams([w for s in split_sentences(p) for w in s.lowers], 4) for p in previous))
    kept: list[str] = []
    for sentence in split_sentences(text):
        own = set(word_ngrams(sentence.lowers, 4))
        piece = text[slice(*sentence.span())].strip()
        if (
            len(sentence.lowers) > MAX_SENTENCE_WORDS
            or meta_text(piece)
            or ASSISTANT_TALK.search(piece)
            or _HEADING.match(piece)
            or _RUN_IN_LABEL.match(piece)
            or opens_without_subject(sentence.lowers)
            or piece.endswith(("...", "\u2026"))
            or (own and len(own & seen) >= COPY_SHARE * len(own))
            or piece in kept
        ):
            continue
        kept.append(piece)
        seen |= own
    if kept and not _FINISHED.search(kept[-1]):
        kept.pop()  # unfinished: the reply hit the token limit mid-sentence (or after an opening quote)
    return without_unpaired_quotes(" ".join(kept))


def opens_without_subject(words: Sequence[str]) -> bool:
    """Whether a sentence (lower-cased ``words``) opens with a verb in the third person singular and
    nothing before it, a small model's summary voice ("Reflects on the impact of urban agriculture by
    examining ...", "Explores how ..."): a word whose only reading is a verb, in its -s form."""
    if not words:
        return False
    first = words[0]
    readings = getAllLemmas(first)
    return set(readings) == {"VERB"} and any(
        first in (getInflection(lemma, "VBZ") or ()) for lemma in readings["VERB"]
    )


def without_unpaired_quotes(text: str) -> str:
    """``text`` without the double quotes that close nothing or open nothing: a small model's reply
    often ends '... from their own homes."' with no opening quote (or opens one it never closes, or
    the cleaning dropped the sentence that closed it). A quote opens when it follows a space, a
    bracket or the start and closes otherwise (curly quotes say which they are); each closing quote
    pairs with the last open one."""
    unpaired: list[int] = []
    opened: list[int] = []
    for i, char in enumerate(text):
        if char == "\u201c" or (char == '"' and (i == 0 or text[i - 1].isspace() or text[i - 1] in "([")):
            opened.append(i)
        elif char in ('"', "\u201d"):
            if opened:
                opened.pop()
            else:
                unpaired.append(i)
    unpaired += opened
    if not unpaired:
        return text
    cut = set(unpaired)
    return re.sub(r"\s{2,}", " ", "".join(c for i, c in enumerate(text) if i not in cut)).strip()


def opening(text: str, words: int = OPENING_WORDS) -> tuple[str, ...]:
    """The first ``words`` lower-cased words of ``text`` (how a paragraph opens)."""
    return tuple(w for s in split_sentences(text) for w in s.lowers)[:words]


def draft_instructions(target: Sequence[float], count: int = STYLE_NOTES) -> list[str]:
    """The first draft's style advice: ``gap_advice`` for the ``count`` largest gaps between
    ``target`` and what the model writes by default (``MODEL_TYPICAL_HRV``), so the prompt asks for
    what the model would otherwise miss ("mix very short sentences with long ones", "use more
    critical wording"), not for what it writes anyway."""
    return gap_advice(target, MODEL_TYPICAL_HRV, count)


def gap_advice(
    target: Sequence[float], measured: Sequence[float], count: int = STYLE_NOTES, exclude: Sequence[str] = ()
) -> list[str]:
    """Plain advice for the ``count`` largest gaps between ``measured`` and ``target`` (no metric
    names), leaving out the dimensions named in ``exclude``."""
    gaps = [t - m for t, m in zip(target, measured)]
    dims = [d for d, name in enumerate(HRV_DIMENSIONS) if name not in exclude]
    order = sorted(dims, key=lambda d: -abs(gaps[d]))[:count]
    return [GAP_ADVICE[HRV_DIMENSIONS[d]][gaps[d] > 0] for d in sorted(order)]


def paragraph_messages(prompt: str, outline: Outline, instructions: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one paragraph: its task in the outline, the style ``instructions``
    (plain phrases such as "ask a question") and its length. No earlier paragraph is included."""
    task = ROLE_TASKS[outline.role].format(prompt=model_brief(prompt).rstrip("."), focus=outline.focus)
    style = " ".join(f"{note[0].upper()}{note[1:]}." for note in instructions)
    user = f"{task} {style} Write {outline.sentences} sentences."
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass
class DraftLog:
    """What happened to one paragraph: each scored candidate's HRV error (mean |gap|) and writing
    reward in sampling order, the chosen one's index, and how many replies the filters emptied."""

    errors: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    chosen: int = 0
    dropped: int = 0


def write_paragraph(
    backend: ChatBackend,
    reward: WritingReward,
    prompt: str,
    outline: Outline,
    target: list[float],
    previous: list[str],
    tolerance: float,
    rounds: int,
    seed: int | None,
    candidates: int = 4,
    planned: Sequence[float] | None = None,
) -> tuple[str, list[float], DraftLog]:
    """(paragraph, its measured HRV, log): ``candidates`` sampled replies, cleaned and scored by
    ``reward`` (against ``previous`` for copying); up to ``rounds`` more batches, with gap advice,
    while the best misses ``target`` by more than ``tolerance`` (mean |gap|). The highest reward wins,
    among the candidates that do not open like an earlier paragraph and have ``MIN_SENTENCES`` when
    there are any (an opening like an earlier paragraph's weighs more than a short one). The first
    prompt's style notes ask for ``planned`` when given (the paragraph's planned target, which
    ``target`` adjusts for the article so far): the notes are coarse, and the same notes keep the
    same candidates, so only the choice among them moves.
    Raises ``BackendError`` when no reply survives the filters."""
    log = DraftLog()
    best: tuple[str, list[float]] | None = None
    best_rank: tuple[bool, bool, float] = (False, False, 0.0)
    openings = {opening(p) for p in previous}
    instructions = draft_instructions(target if planned is None else planned)
    for round_index in range(rounds + 1):
        if best is not None:
            if log.errors[log.chosen] <= tolerance:
                break
            instructions = gap_advice(target, best[1])
        messages = paragraph_messages(prompt, outline, instructions)
        replies = backend.sample(messages, candidates, None if seed is None else seed + round_index)
        for reply in replies:
            text = clean_reply(reply, previous)
            if not text:
                log.dropped += 1
                continue
            scored = reward.score(text, target, prompt=prompt, context=previous)
            log.errors.append(mean_gap(target, scored.hrv))
            log.rewards.append(scored.reward)
            rank = (opening(text) not in openings, len(split_sentences(text)) >= MIN_SENTENCES, scored.reward)
            if best is None or rank > best_rank:
                best, best_rank, log.chosen = (text, scored.hrv), rank, len(log.rewards) - 1
    if best is None:
        raise BackendError(
            f"the {backend.name} backend returned no usable text for paragraph {outline.index + 1} "
            f"({log.dropped} replies were empty, meta-text or copies); try another seed"
        )
    return best[0], best[1], log
