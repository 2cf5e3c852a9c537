"""The shipped writers' corpora: three writers, thousands of sentences each, held out by book."""

from __future__ import annotations

import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.core.text import sentence_texts
from resonance_os.voice.corpora import (
    WRITERS,
    corpus_summary,
    load_writer,
    load_writer_records,
)


def test_three_writers_with_thousands_of_sentences_each() -> None:
    assert len(WRITERS) >= 3
    for name in WRITERS:
        paragraphs = load_writer(name, "train")
        assert sum(len(sentence_texts(p)) for p in paragraphs) >= 3000
        assert all(30 <= len(p.split()) <= 300 for p in paragraphs)
        assert len(load_writer(name, "heldout")) >= 200


@pytest.mark.parametrize("name", WRITERS)
def test_train_and_heldout_come_from_different_books(name: str) -> None:
    train = load_writer_records(name, "train")
    heldout = load_writer_records(name, "heldout")
    assert {p.book for p in train}.isdisjoint({p.book for p in heldout})
    assert {p.text for p in train}.isdisjoint({p.text for p in heldout})
    summary = corpus_summary()[name]
    assert summary["train"]["paragraphs"] == len(train)
    assert set(summary["heldout"]["books"]) == {p.book for p in heldout}


def test_no_project_gutenberg_boilerplate_is_shipped() -> None:
    for name in WRITERS:
        for split in ("train", "heldout"):
            for text in load_writer(name, split):
                assert "gutenberg" not in text.lower()
                assert "\u201c" not in text and "\u2019" not in text  # typography made uniform


def test_bad_names_are_refused_with_the_choices() -> None:
    with pytest.raises(ValidationError, match="austen"):
        load_writer("shakespeare")
    with pytest.raises(ValidationError, match="heldout"):
        load_writer("austen", "test")  # type: ignore[arg-type]
