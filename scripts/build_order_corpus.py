"""Build the book paragraphs the sentence-order readers train and are evaluated on.

    .venv/bin/python scripts/build_order_corpus.py BOOKS_DIR [--out build/order_corpus]

``BOOKS_DIR`` holds Project Gutenberg plain-text books (``*.txt``, public domain in the United States)
in folders named by genre, and mdBook chapters (``*.md``) of a book that teaches a programming language;
see ``src/resonance_os/quality/data/SOURCES.md`` for the exact sources and commits. Each file's domain
comes from its folder (``FOLDER_DOMAINS``); a file in no listed folder is skipped (drama and verse are
not prose paragraphs, and the ``fiction`` folder of that collection repeats books of the others).

Writes ``OUT/train.jsonl`` (domains ``quality.corpus.ORDER_TRAIN_DOMAINS``) and ``OUT/heldout.jsonl``
(``ORDER_HELDOUT_DOMAINS``: whole domains held out, so every figure on them is on another kind of
prose than the readers learnt from), one ``{"domain", "source", "text"}`` per paragraph of 40+ words
and 3-8 sentences, in book order. A training paragraph sharing a sentence with a held-out one is
dropped. Nothing of this ships: only the weights fitted on it do.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

from resonance_os.quality.corpus import (
    ORDER_HELDOUT_DOMAINS,
    gutenberg_paragraphs,
    markdown_paragraphs,
    order_paragraphs,
    sentences,
)

FOLDER_DOMAINS = {
    "classics": "novels",
    "science_fiction": "novels",
    "childrens_literature": "children",
    "philosophy": "philosophy",
    "historical_documents": "history",
    "essays": "essays",
    "specialized_texts": "essays",
    "rust_book": "programming",
}


def book_paragraphs(path: Path) -> list[str]:
    text = path.read_text("utf-8", errors="replace")
    blocks = markdown_paragraphs(text) if path.suffix == ".md" else gutenberg_paragraphs(text)
    return order_paragraphs(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("books", type=Path, help="folder of books in genre folders")
    parser.add_argument("--out", type=Path, default=Path("build/order_corpus"))
    args = parser.parse_args()
    if not args.books.is_dir():
        parser.error(f"{args.books} is not a folder")
    rows: dict[str, list[dict[str, str]]] = {"train": [], "heldout": []}
    for path in sorted(args.books.rglob("*")):
        domain = next((FOLDER_DOMAINS[p] for p in path.parts if p in FOLDER_DOMAINS), None)
        if domain is None or path.suffix not in (".txt", ".md") or path.name == "SUMMARY.md":
            continue
        split = "heldout" if domain in ORDER_HELDOUT_DOMAINS else "train"
        source = "rust_book" if domain == "programming" else path.stem
        rows[split] += [{"domain": domain, "source": source, "text": p} for p in book_paragraphs(path)]
    held = set(sentences([r["text"] for r in rows["heldout"]]))
    rows["train"] = [r for r in rows["train"] if held.isdisjoint(sentences([r["text"]]))]
    args.out.mkdir(parents=True, exist_ok=True)
    for split, items in rows.items():
        target = args.out / f"{split}.jsonl"
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in items)
        os.replace(tmp, target)
        domains = Counter(r["domain"] for r in items)
        books = len({r["source"] for r in items})
        print(
            f"{target}: {len(items)} paragraphs from {books} books: "
            + ", ".join(f"{d} {n}" for d, n in sorted(domains.items()))
        )


if __name__ == "__main__":
    main()
