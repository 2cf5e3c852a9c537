"""Sentence splitting and clean-up: abbreviations, dialogue, lists, markup, offsets."""

from __future__ import annotations

import pytest

from resonance_os.core.text import clean_text, split_sentences


def _split(text: str) -> list[str]:
    cleaned = clean_text(text)
    return [text[slice(*s.span())] for s in split_sentences(cleaned)]


def test_abbreviations_initials_and_decimals_do_not_split() -> None:
    text = "Mr. Smith met Dr. J. Watson, e.g. at 3.14 pm. They talked. Then they left!"
    assert _split(text) == [
        "Mr. Smith met Dr. J. Watson, e.g. at 3.14 pm.",
        "They talked.",
        "Then they left!",
    ]


def test_dialogue_tag_stays_with_its_quote() -> None:
    assert _split('"Stop!" he said. She ran.') == ['"Stop!" he said.', "She ran."]


def test_lists_headings_and_blank_lines_are_boundaries() -> None:
    text = "# Plan\n- buy milk\n- call Anna\n\nno full stop here\n1. first step"
    assert _split(text) == ["Plan", "buy milk", "call Anna", "no full stop here", "first step"]


def test_clean_text_keeps_length_and_folds_quotes() -> None:
    text = "<p>\u201cHi\u201d &amp; it\u2019s <b>fine</b></p>"
    cleaned = clean_text(text)
    assert len(cleaned) == len(text)
    assert '"Hi"' in cleaned and "it's" in cleaned and "<" not in cleaned


@pytest.mark.parametrize("text", ["Hello", "hello world", "Is it? yes"])
def test_text_without_final_punctuation_is_one_unit_at_least(text: str) -> None:
    sentences = split_sentences(clean_text(text))
    assert len(sentences) >= 1
    assert sum(len(s.words) for s in sentences) == len(text.replace("?", "").split())


def test_no_at_the_end_of_a_sentence_still_splits() -> None:
    assert _split("The answer was no. We left. Ms. Lee stayed.") == [
        "The answer was no.",
        "We left.",
        "Ms. Lee stayed.",
    ]
