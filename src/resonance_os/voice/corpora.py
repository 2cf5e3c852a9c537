"""The writers' corpora shipped for the voice check, and the paragraph pool built beside them.

Three public-domain writers with clearly different voices, as prose paragraphs (30-300 words) from
Project Gutenberg books, split into ``train`` and ``heldout`` BY BOOK (no held-out paragraph comes from
a book that train holds); see ``data/manifest.json`` for the books and ``data/SOURCES.md`` for where
they come from. ``scripts/build_writer_corpora.py`` builds the files deterministically.

    from resonance_os.voice.corpora import WRITERS, load_writer, load_writer_records

    WRITERS                                   # ("austen", "twain", "poe")
    load_writer("austen")                     # train paragraphs, list[str]
    load_writer("twain", "heldout")           # held-out paragraphs (other books)
    load_writer_records("poe", "train")       # [WriterParagraph(book=..., text=...), ...]
    corpus_summary()                          # books, paragraphs, sentences, words per writer/split

Use ``train`` for fitting anything (classifiers, profiles, adapters by SFT) and keep ``heldout`` for
measuring. (The order readers' larger pool of paragraphs across domains is ``quality.corpus``.)
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from resonance_os.core.errors import ValidationError

DATA = Path(__file__).resolve().parent / "data"
Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")


@dataclass(frozen=True)
class WriterParagraph:
    """One paragraph and the book it comes from."""

    book: str
    text: str


@cache
def corpus_summary() -> dict[str, dict[str, object]]:
    """Per writer: author folder, and per split its books and paragraph / sentence / word counts."""
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    return manifest["writers"]


WRITERS: tuple[str, ...] = tuple(corpus_summary())
"""The shipped writers' names, as ``load_writer`` takes them."""


def _check(name: str, split: str) -> None:
    if name not in WRITERS:
        raise ValidationError(f"unknown writer {name!r}; the shipped writers are {', '.join(WRITERS)}")
    if split not in SPLITS:
        raise ValidationError(f"unknown split {split!r}; choose 'train' or 'heldout'")


def read_jsonl_gz(path: Path) -> list[dict[str, str]]:
    """The objects of a gzip'd JSON-lines file."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@cache
def load_writer_records(name: str, split: Split = "train") -> tuple[WriterParagraph, ...]:
    """A writer's paragraphs of one split with their books, in book order."""
    _check(name, split)
    return tuple(
        WriterParagraph(r["book"], r["text"]) for r in read_jsonl_gz(DATA / f"{name}.{split}.jsonl.gz")
    )


def load_writer(name: str, split: Split = "train") -> list[str]:
    """A writer's paragraphs of one split (``"train"`` or ``"heldout"``), in book order."""
    return [p.text for p in load_writer_records(name, split)]
