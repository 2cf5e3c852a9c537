"""Build the writers' corpora the voice check ships from Project Gutenberg texts.

The source is a checkout (or a bare git mirror) of a repository holding Project Gutenberg plain-text
books in one folder per author, ``"Surname, Forename/Title.txt"`` (the one used here is named in
``src/resonance_os/voice/data/SOURCES.md``). For each book the Project Gutenberg header, licence and
footer are cut away (only the text between the ``*** START OF`` and ``*** END OF`` lines is read, and
no kept paragraph names Project Gutenberg), then the book is split into prose paragraphs: headings,
verse, tables of contents, illustration notes and paragraphs under ``MIN_WORDS`` or over ``MAX_WORDS``
are dropped, line breaks and ``_italic_`` marks are undone, curly quotes become straight ones.

Writers (``WRITERS``) are split into train and held-out BY BOOK: no paragraph of a held-out book is in
train. Each split keeps at most ``TRAIN_PARAGRAPHS`` / ``HELDOUT_PARAGRAPHS`` paragraphs, drawn with a
fixed seed and kept in book order, so a rebuild from the same source gives the same bytes.

    .venv/bin/python scripts/build_writer_corpora.py --source /path/to/Gutenberg_Text

Writes ``src/resonance_os/voice/data/<writer>.<split>.jsonl.gz`` (one ``{"book", "text"}`` object per
line) and ``manifest.json`` (books, paragraph and sentence counts, the source commit).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from resonance_os.core.text import sentence_texts

DATA = Path(__file__).resolve().parents[1] / "src" / "resonance_os" / "voice" / "data"
MIN_WORDS = 30
MAX_WORDS = 300
TRAIN_PARAGRAPHS = 2000
HELDOUT_PARAGRAPHS = 500


@dataclass(frozen=True)
class Writer:
    folder: str
    train: tuple[str, ...]
    heldout: tuple[str, ...]


WRITERS: dict[str, Writer] = {
    "austen": Writer(
        "Austen, Jane",
        train=("Emma", "Mansfield Park", "Sense and Sensibility", "Pride and Prejudice"),
        heldout=("Persuasion", "Northanger Abbey"),
    ),
    "twain": Writer(
        "Twain, Mark",
        train=(
            "The Adventures of Tom Sawyer",
            "Adventures of Huckleberry Finn",
            "A Connecticut Yankee in King Arthur's Court",
            "Life on the Mississippi",
            "The Innocents Abroad",
        ),
        heldout=("The Tragedy of Pudd'nhead Wilson", "Roughing It"),
    ),
    "poe": Writer(
        "Poe, Edgar Allan",
        train=(
            "The Works of Edgar Allan Poe — Volume 2",
            "The Works of Edgar Allan Poe — Volume 3",
            "The Works of Edgar Allan Poe — Volume 4",
        ),
        heldout=("The Works of Edgar Allan Poe — Volume 5",),
    ),
}
"""Three public-domain writers with clearly different voices: Regency social comedy (Austen), American
vernacular humour and travel writing (Twain), Gothic tales and ratiocination (Poe). Volume 1 of Poe's
works is left out: it opens with two memoirs by other writers."""

_START = re.compile(r"^\*\*\* ?START OF (THE|THIS) PROJECT GUTENBERG", re.IGNORECASE | re.MULTILINE)
_END = re.compile(
    r"^(\*\*\* ?END OF (THE|THIS) PROJECT GUTENBERG|End of (the )?Project Gutenberg)",
    re.IGNORECASE | re.MULTILINE,
)
_NOT_PROSE = re.compile(
    r"gutenberg|https?:|www\.|e-?text|e-?book|\[illustration|transcriber|produced by|copyright", re.IGNORECASE
)
_HEADING = re.compile(r"^\s*(chapter|book|part|volume|section|letter|canto|stave)\b", re.IGNORECASE)
_ASCII_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
"""Books of one writer use curly or straight quotes by edition; all become straight, so that no
split or classifier can tell a book by its typography."""
_ENDS_SENTENCE = re.compile(r"[.!?][\"'’”)\]]*$")


class Source:
    """Books read from a checkout, or from a bare git mirror's HEAD."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = (root / "HEAD").is_file() and (root / "objects").is_dir()

    def commit(self) -> str:
        return self._git("rev-parse", "HEAD").strip()

    def read(self, folder: str, title: str) -> str:
        path = f"{folder}/{title}.txt"
        raw = self._git_bytes("show", f"HEAD:{path}") if self.bare else (self.root / path).read_bytes()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")

    def _git_bytes(self, *args: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", str(self.root), *args], check=True, capture_output=True
        ).stdout

    def _git(self, *args: str) -> str:
        return self._git_bytes(*args).decode("utf-8")


def book_body(text: str) -> str:
    """The text between the Project Gutenberg start and end lines (the whole text when they are absent)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = _START.search(text)
    if start is not None:
        text = text[text.index("\n", start.start()) + 1 :]
    end = _END.search(text)
    if end is not None:
        text = text[: end.start()]
    return text


def _is_prose_block(lines: list[str]) -> bool:
    if _HEADING.match(lines[0]) or lines[0].strip().isupper():
        return False
    if len(lines) >= 3:
        widths = [len(line.rstrip()) for line in lines[:-1]]
        if sum(widths) / len(widths) < 50:  # verse, tables of contents, lists
            return False
        if sum(line.startswith(" ") for line in lines) > len(lines) // 2:  # indented: verse or quotation
            return False
    return True


def prose_paragraphs(body: str) -> list[str]:
    """The book's prose paragraphs of ``MIN_WORDS``..``MAX_WORDS`` words, each on one line."""
    out = []
    for block in re.split(r"\n\s*\n", body):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines or not _is_prose_block(lines):
            continue
        text = " ".join(line.strip() for line in lines)
        text = re.sub(r"\s+", " ", text.replace("_", "").translate(_ASCII_QUOTES)).strip()
        words = len(text.split())
        if MIN_WORDS <= words <= MAX_WORDS and _ENDS_SENTENCE.search(text) and not _NOT_PROSE.search(text):
            out.append(text)
    return out


def _records(source: Source, folder: str, titles: tuple[str, ...]) -> list[dict[str, str]]:
    records = []
    for title in titles:
        paragraphs = prose_paragraphs(book_body(source.read(folder, title)))
        if not paragraphs:
            raise SystemExit(f"{folder}/{title}: no prose paragraphs found")
        records.extend({"book": title, "text": p} for p in paragraphs)
    return records


def _sample(records: list[dict[str, str]], limit: int, seed: str) -> list[dict[str, str]]:
    """At most ``limit`` records drawn with ``seed``, in their original (book) order."""
    if len(records) <= limit:
        return records
    keep = sorted(random.Random(seed).sample(range(len(records)), limit))
    return [records[i] for i in keep]


def _write_jsonl_gz(path: Path, records: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    # mtime=0 and no file name: the same paragraphs give the same bytes.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(payload)


def _stats(records: list[dict[str, str]]) -> dict[str, int]:
    return {
        "paragraphs": len(records),
        "sentences": sum(len(sentence_texts(r["text"])) for r in records),
        "words": sum(len(r["text"].split()) for r in records),
    }


def build_writers(source: Source, out: Path) -> dict[str, object]:
    manifest: dict[str, object] = {"source_commit": source.commit() if source.bare else None, "writers": {}}
    for name, writer in WRITERS.items():
        entry = {}
        for split, titles, limit in (
            ("train", writer.train, TRAIN_PARAGRAPHS),
            ("heldout", writer.heldout, HELDOUT_PARAGRAPHS),
        ):
            records = _sample(_records(source, writer.folder, titles), limit, f"{name}:{split}")
            _write_jsonl_gz(out / f"{name}.{split}.jsonl.gz", records)
            entry[split] = {"books": list(titles), **_stats(records)}
            print(f"{name:7s} {split:8s} {entry[split]}", file=sys.stderr)
        manifest["writers"][name] = {"author": writer.folder, **entry}  # type: ignore[index]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True, help="Gutenberg_Text checkout or bare mirror")
    parser.add_argument("--out", type=Path, default=DATA, help="where the writers' files go")
    args = parser.parse_args()
    build_writers(Source(args.source), args.out)


if __name__ == "__main__":
    main()
