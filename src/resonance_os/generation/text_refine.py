"""Editing a user's own text toward a target HRV, paragraph by paragraph, and the word diff of the edit.

One path for every caller: ``resonance refine`` (CLI) and ``POST /v1/refine`` (service) both call
:func:`refine_text`, which sends each paragraph through the writer's public ``revise`` seam (the
refiner's closed loop: an edit is kept when it closes the style gap without costing quality).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from resonance_os.core.errors import ValidationError
from resonance_os.core.text import split_paragraphs
from resonance_os.quality.reward import WritingScore

_WORDS_AND_SPACES = re.compile(r"\S+|\s+")


@dataclass
class RefinedText:
    """The paragraphs before and after, the kept edits, and the whole text's score before and after."""

    paragraphs: list[str]
    edited: list[str]
    edits: list[str]
    before: WritingScore
    after: WritingScore

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
    for i, paragraph in enumerate(paragraphs):
        if edited and between_paragraphs is not None:
            between_paragraphs()
        revised = writer.revise(paragraph, target, seed=seed + i)
        edited.append(revised.text)
        edits.extend(revised.trace["refiner_edits"])
    before = writer.reward.score("\n\n".join(paragraphs), target)
    after = writer.reward.score("\n\n".join(edited), target)
    return RefinedText(paragraphs, edited, edits, before, after)


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
