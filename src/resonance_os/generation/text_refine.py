"""Editing a user's own text toward a target HRV, paragraph by paragraph, and the word diff of the edit.

One path for every caller: ``resonance refine`` (CLI) and ``POST /v1/refine`` (service) both call
:func:`refine_text`, which sends each paragraph through the writer's public ``revise`` seam (the
refiner's closed loop: an edit is kept when it closes the style gap without costing quality). Each kept
edit is also a :class:`Suggestion` told in words ("Made a word less warm: 'delighted' -> 'pleased'"),
which a writer may accept or reject one by one: :func:`apply_suggestions` applies the accepted ones.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.text import split_paragraphs
from resonance_os.quality.reward import WritingScore

_WORDS_AND_SPACES = re.compile(r"\S+|\s+")


EDIT_WORDS = {
    "split_longest": "Split a long sentence in two",
    "split_shortest": "Split a sentence in two",
    "merge_shortest": "Joined two short sentences into one",
    "merge_longest": "Joined two sentences into one",
    "warmer_word": "Made a word warmer",
    "remove_negative_opener": "Removed a negative opening word",
    "drop_negative_adjective": "Dropped a negative adjective",
    "colder_word": "Made a word less warm",
    "remove_positive_opener": "Removed a positive opening word",
    "drop_positive_adjective": "Dropped a positive adjective",
    "add_intensifier": "Added an intensifier",
    "stronger_word": "Chose a stronger word",
    "remove_intensifier": "Removed an intensifier",
    "milder_word": "Chose a milder word",
    "remove_evaluative_opener": "Removed an evaluative opening word",
    "drop_evaluative_adjective": "Dropped an evaluative adjective",
    "remove_hedge": "Removed a hedge",
    "add_booster": "Added a confident opening (a booster)",
    "remove_booster": "Removed a booster",
    "add_hedge": "Added a hedge",
    "to_question": "Turned a statement into a question",
    "to_statement": "Turned a question into a statement",
    "add_simile": "Added a comparison (a simile)",
    "remove_simile": "Removed a comparison (a simile)",
    "add_time_marker": "Added a time marker",
    "remove_time_marker": "Removed a time marker",
    "to_active": "Made a passive sentence active",
    "to_passive": "Made an active sentence passive",
}
"""Each refiner edit (``refiner_layer``'s operator names) in words."""
SHORT_CHANGE_WORDS = 4
"""A change of at most this many words each side is quoted in a suggestion's label."""


@dataclass(frozen=True)
class Suggestion:
    """One kept edit of paragraph ``paragraph`` (from 0): ``before`` (sentences of that paragraph as
    the edits before it left them) becomes ``after``; ``edit`` is the refiner's name for it."""

    id: int
    paragraph: int
    edit: str
    before: str
    after: str

    @property
    def label(self) -> str:
        """The edit in words, with the words it changed when few: "Made a word less warm: 'delighted'
        -> 'pleased'"."""
        operator = self.edit.split(":", 1)[-1]
        words = EDIT_WORDS.get(operator, operator.replace("_", " ").capitalize())
        segments = word_diff(self.before, self.after)
        changed = [s for s in segments if s["op"] != "equal"]
        removed = " ".join(s["text"].strip() for s in changed if s["op"] == "delete").strip()
        added = " ".join(s["text"].strip() for s in changed if s["op"] == "insert").strip()
        short = all(len(part.split()) <= SHORT_CHANGE_WORDS for part in (removed, added))
        if not changed or not short or len(changed) > 2:
            return words
        if removed and added:
            return f"{words}: '{removed}' -> '{added}'"
        return f"{words}: {'removed' if removed else 'added'} '{removed or added}'"

    @property
    def reason(self) -> str:
        """Why, in words: which dimension it moves toward the target, and which way."""
        dimension, _, _ = self.edit.partition(":")
        name, sign = dimension[:-1], dimension[-1:]
        if name not in HRV_DIMENSIONS:
            return ""
        way = "raise" if sign == "+" else "lower"
        return f"to {way} {name.replace('_', ' ')} toward the target"

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "paragraph": self.paragraph,
            "edit": self.edit,
            "label": self.label,
            "reason": self.reason,
            "before": self.before,
            "after": self.after,
        }


@dataclass
class RefinedText:
    """The paragraphs before and after, the kept edits (as names and as suggestions), and the whole
    text's score before and after."""

    paragraphs: list[str]
    edited: list[str]
    edits: list[str]
    before: WritingScore
    after: WritingScore
    suggestions: list[Suggestion]

    @property
    def original_text(self) -> str:
        return "\n\n".join(self.paragraphs)

    @property
    def text(self) -> str:
        return "\n\n".join(self.edited)


def refine_text(
    writer,
    text: str,
    target: Sequence[float],
    seed: int = 0,
    between_paragraphs: Callable[[], None] | None = None,
) -> RefinedText:
    """Edit each paragraph of ``text`` toward ``target`` with ``writer.revise`` (paragraph ``i`` with
    seed ``seed + i``) and score the whole text before and after with ``writer.reward``.

    ``between_paragraphs`` is called before every paragraph after the first (a service passes its
    writer turn there). Raises ``ValidationError`` when the text has no paragraph."""
    paragraphs = split_paragraphs(text)
    if not paragraphs:
        raise ValidationError("the text is empty; give at least one sentence to edit")
    target = list(target)
    edited: list[str] = []
    edits: list[str] = []
    suggestions: list[Suggestion] = []
    for i, paragraph in enumerate(paragraphs):
        if edited and between_paragraphs is not None:
            between_paragraphs()
        revised = writer.revise(paragraph, target, seed=seed + i)
        edited.append(revised.text)
        edits.extend(revised.trace["refiner_edits"])
        for name, (old, new) in zip(revised.trace["refiner_edits"], revised.trace["refiner_changes"]):
            suggestions.append(Suggestion(len(suggestions), i, name, old, new))
    before = writer.reward.score("\n\n".join(paragraphs), target)
    after = writer.reward.score("\n\n".join(edited), target)
    return RefinedText(paragraphs, edited, edits, before, after, suggestions)


def apply_suggestions(
    text: str, suggestions: Sequence[Suggestion], accepted: set[int]
) -> tuple[str, list[int], list[int]]:
    """``text`` with the ``accepted`` suggestions (by id) applied in order, each to its paragraph;
    returns the text, the ids applied and the ids skipped: an accepted edit of a sentence that a
    rejected edit wrote (its ``before`` is no longer in the paragraph) cannot apply on its own.
    Accepting all gives :func:`refine_text`'s text, none the original."""
    paragraphs = split_paragraphs(text)
    applied: list[int] = []
    skipped: list[int] = []
    for suggestion in suggestions:
        if suggestion.id not in accepted:
            continue
        if not 0 <= suggestion.paragraph < len(paragraphs):
            raise ValidationError(
                f"suggestion {suggestion.id} is for paragraph {suggestion.paragraph + 1}, but the text has "
                f"{len(paragraphs)}: send the text the suggestions were made for"
            )
        paragraph = paragraphs[suggestion.paragraph]
        if suggestion.before and suggestion.before in paragraph:
            paragraphs[suggestion.paragraph] = paragraph.replace(suggestion.before, suggestion.after, 1)
            applied.append(suggestion.id)
        else:
            skipped.append(suggestion.id)
    return "\n\n".join(paragraphs), applied, skipped


def word_diff(before: str, after: str) -> list[dict[str, str]]:
    """Word-level diff (difflib over words and the spaces between them) as segments
    ``{"op": "equal" | "delete" | "insert", "text": ...}`` that read ``before`` from the equal and
    delete segments and ``after`` from the equal and insert segments."""
    old, new = _WORDS_AND_SPACES.findall(before), _WORDS_AND_SPACES.findall(after)
    segments: list[dict[str, str]] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _append(segments, "equal", "".join(old[i1:i2]))
            continue
        _append(segments, "delete", "".join(old[i1:i2]))
        _append(segments, "insert", "".join(new[j1:j2]))
    return segments


def _append(segments: list[dict[str, str]], op: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1]["op"] == op:
        segments[-1]["text"] += text
    else:
        segments.append({"op": op, "text": text})
