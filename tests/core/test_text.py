"""The one splitter's string views: sentence_texts cuts where split_sentences does and drops nothing;
split_paragraphs splits at blank lines."""

from __future__ import annotations

import re

import pytest

from resonance_os.core.text import sentence_texts, split_paragraphs, split_sentences
from resonance_os.profiling import sample_article


@pytest.mark.parametrize(
    "text, pieces",
    [
        ("Dr. Smith went home. He slept.", ["Dr. Smith went home.", "He slept."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        (
            "It works, e.g. the list. (See below.) Done.",
            ["It works, e.g. the list.", "(See below.)", "Done."],
        ),
        ("- first item\n- second item", ["- first item", "- second item"]),
        ("1. One thing. Two things.\n2. Next", ["1. One thing.", "Two things.", "2. Next"]),
        ('Patterns like "(...)" vs "[...]" ).', ['Patterns like "(...)" vs "[...]" ).']),
        ("Hello. ... World.", ["Hello. ...", "World."]),
        ("... Wait. Go.", ["... Wait.", "Go."]),
        ("...", ["..."]),
        ("  \n ", []),
    ],
)
def test_sentence_texts_cut_at_the_extractors_boundaries_and_keep_every_character(text, pieces):
    assert sentence_texts(text) == pieces
    assert " ".join(pieces) == re.sub(r"\s+", " ", text).strip()


def test_one_piece_per_measured_sentence_on_real_prose():
    for paragraph in split_paragraphs(sample_article()):
        measured = split_sentences(paragraph)
        pieces = sentence_texts(paragraph)
        assert len(pieces) == len(measured)
        assert pieces == [paragraph[slice(*s.span())] for s in measured]


def test_split_paragraphs_at_blank_lines():
    text = "  One.\nStill one.\n\n \t\nTwo.\n\n\n"
    assert split_paragraphs(text) == ["One.\nStill one.", "Two."]
    assert split_paragraphs(" \n\n ") == []
