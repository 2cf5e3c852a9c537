"""Writing with a chat model: the planner's targets as style instructions, and re-prompting with gaps.

``write_paragraph`` asks for one paragraph in the style the target implies, measures it, and while a
dimension is off by more than the tolerance re-prompts with the measured gaps spelt out ("curiosity:
measured 0.05, target 0.35: ask a question"), keeping the closest draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from resonance_os.core.hrv_constants import HRV_DESCRIPTIONS, HRV_DIMENSIONS
from resonance_os.generation.backends.base import BackendError, ChatBackend
from resonance_os.generation.planner_layer import Outline

if TYPE_CHECKING:
    from resonance_os.quality.reward import WritingReward

SYSTEM_PROMPT = (
    "You are a careful writer. You write one paragraph of plain English prose at a time: no title, no "
    "list, no markdown, no preamble, no quotation of these instructions."
)
GAP_ADVICE: dict[str, tuple[str, str]] = {
    "sentence_variance": ("make sentence lengths more even", "mix very short sentences with long ones"),
    "emotional_valence": ("use more negative, critical wording", "use more positive, warmer wording"),
    "emotional_intensity": (
        "tone the wording down, calmer and plainer",
        "use stronger, more vivid emotional words",
    ),
    "assertiveness_index": (
        "hedge more (perhaps, may, seems) and drop emphatic words",
        "state claims more firmly (clearly, in fact), drop hedges",
    ),
    "curiosity_index": (
        "ask fewer questions and drop words like why or wonder",
        "ask a question or wonder aloud about something unknown",
    ),
    "metaphor_density": ("remove similes and figurative comparisons", "add a simile (like a ..., as if ...)"),
    "storytelling_index": (
        "write in the present tense, without anecdotes, people or time markers",
        "tell it as a small story: past tense, a person, time markers",
    ),
    "active_voice_ratio": (
        "use the passive voice in a sentence or two",
        "rewrite passive sentences in the active voice",
    ),
}


_PREAMBLE = re.compile(
    r"^[^:\n]{0,200}\b(?:paragraph|version|revision|text)\b[^:\n]{0,40}:\s*", re.IGNORECASE
)


def _clean_reply(reply: str) -> str:
    """One paragraph of prose from a model reply.

    Drops markdown, headings, list bullets, surrounding quotes, a preamble such as "Here's the
    revised paragraph:" and an unfinished last sentence (a reply cut off at the token limit).
    """
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("#")]
    text = " ".join(re.sub(r"^[-*\u2022]\s+", "", line) for line in lines)
    text = _PREAMBLE.sub("", re.sub(r"[*_`]", "", text).strip())
    if len(text) > 1 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    last_end = max(text.rfind("."), text.rfind("!"), text.rfind("?"))
    if 0 < last_end < len(text) - 1 and not text[last_end + 1 :].strip().startswith('"'):
        text = text[: last_end + 1]
    return text


def paragraph_messages(prompt: str, outline: Outline, previous: list[str]) -> list[dict[str, str]]:
    """Chat messages asking for one paragraph of the outline in its style."""
    context = ""
    if previous:
        context = "The article so far:\n\n" + "\n\n".join(previous) + "\n\n"
    user = (
        f"{context}Write paragraph {outline.index + 1} (the {outline.role}) of a short article on: {prompt}\n"
        f"Mention '{outline.focus}'. About {outline.sentences} sentences.\n"
        "Style: " + "; ".join(outline.notes) + "."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def revision_messages(
    paragraph: str, target: list[float], measured: list[float], tolerance: float
) -> list[dict[str, str]]:
    """Chat messages asking to revise ``paragraph``, listing each dimension that is off target."""
    lines = []
    for name, t, m in zip(HRV_DIMENSIONS, target, measured):
        if abs(t - m) > tolerance:
            advice = GAP_ADVICE[name][1 if t > m else 0]
            lines.append(f"- {name} ({HRV_DESCRIPTIONS[name]}): measured {m:.2f}, target {t:.2f}: {advice}")
    user = (
        "Revise this paragraph. Keep its topic and length; change only what the notes ask.\n\n"
        f"{paragraph}\n\nNotes:\n" + "\n".join(lines) + "\n\nReply with the revised paragraph only."
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass
class DraftLog:
    """What happened to one paragraph: each draft's HRV error and writing reward, and the chosen one."""

    errors: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    chosen: int = 0


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
) -> tuple[str, list[float], DraftLog]:
    """(paragraph, its measured HRV, log): one draft plus up to ``rounds`` measured revisions; the
    draft with the highest writing reward (``reward``, checked against ``previous`` for copying) wins."""
    log = DraftLog()
    best: tuple[str, list[float]] | None = None
    text, hrv = "", list(target)
    messages = paragraph_messages(prompt, outline, previous)
    for round_index in range(rounds + 1):
        if round_index:
            if max(abs(t - m) for t, m in zip(target, hrv)) <= tolerance:
                break
            messages = revision_messages(text, target, hrv, tolerance)
        draft_seed = None if seed is None else seed + round_index
        text = _clean_reply(backend.complete(messages, seed=draft_seed)) or text
        if not text:
            raise BackendError(
                f"the {backend.name} backend returned no usable text for paragraph {outline.index + 1}"
            )
        scored = reward.score(text, target, prompt=prompt, context=previous)
        hrv = scored.hrv
        log.errors.append(sum(abs(t - m) for t, m in zip(target, hrv)) / len(target))
        log.rewards.append(scored.reward)
        if best is None or scored.reward > log.rewards[log.chosen]:
            best, log.chosen = (text, hrv), len(log.rewards) - 1
    return best[0], best[1], log
