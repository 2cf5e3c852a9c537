"""Prompts are bounded after Unicode normalisation, and a language model sees a bounded brief, so one
request's cost cannot be inflated by characters NFKC expands (U+FDF2 -> 4) or by a long prompt."""

from __future__ import annotations

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.generation.llm_writing import paragraph_messages
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.generation.topics import (
    MAX_BRIEF_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TOPIC_WORD_CHARS,
    model_brief,
    topic_phrases,
    validate_prompt,
)


def test_a_prompt_that_nfkc_inflates_past_the_limit_is_refused_with_the_reason():
    assert validate_prompt("\ufdf2" * (MAX_PROMPT_CHARS // 4)) == "\ufdf2" * (MAX_PROMPT_CHARS // 4)
    with pytest.raises(ValidationError, match=r"4004 characters after Unicode normalisation \(NFKC"):
        validate_prompt("\ufdf2" * (MAX_PROMPT_CHARS // 4 + 1))


def test_the_model_brief_is_normalised_and_cut_at_a_word_boundary():
    long_prompt = "harbour mornings and the fishing boats " * 200
    brief = model_brief(long_prompt)
    assert len(brief) <= MAX_BRIEF_CHARS and long_prompt.startswith(brief)
    assert not brief.endswith(" ") and long_prompt[len(brief)] == " "
    assert model_brief("caf\u00e9  \ufb01sh\n") == "caf\u00e9 fish"  # NFKC: the ligature becomes 'fi'
    assert len(model_brief("x" * 5000)) == MAX_BRIEF_CHARS  # no space to cut at


def test_what_the_model_is_asked_does_not_grow_with_the_prompt():
    outline = PlannerLayer().plan_paragraphs("harbour", 1, [0.5] * 8)[0][0]
    short = paragraph_messages("harbour", outline, ["ask a question"])[1]["content"]
    huge = paragraph_messages("\ufdf2" * 1000, outline, ["ask a question"])[1]["content"]
    assert len(huge) <= len(short) + MAX_BRIEF_CHARS


def test_topic_phrases_cut_a_giant_word():
    phrases = topic_phrases("\ufdf2" * 1000)
    assert phrases and all(len(word) <= MAX_TOPIC_WORD_CHARS for p in phrases for word in p.split())
