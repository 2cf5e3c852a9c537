"""Text units: the one sentence and paragraph splitter the extractor, the quality terms, the writer's
edits and the corpus all use, linear in the text's length.

A careful regular expression does the work, in C: one scan finds sentence boundaries, one scan per
sentence finds its words (a sentence splitter such as pysbd is about 300x slower and agrees with a
dependency parser no more often on this kind of text). Rules:

* ``.``, ``!``, ``?`` or ``…`` (then any closing quotes or brackets) followed by white space and a word
  that does not start in lower case ends a sentence; so "e.g. the list" and '"Stop!" he said' stay
  whole. A full stop after a title or an initial ("Dr.", "Mr.", "J.", "e.g.", "i.e.") never ends one.
* A blank line, an HTML block tag, or a line that starts with a bullet (``-``, ``*``, ``•``, ``1.``),
  a markdown heading (``#``) or a quote marker (``>``) also ends a sentence, so lists, headings and text
  without any sentence punctuation still split into units.
* Curly quotes and apostrophes are folded to ASCII, HTML tags and entities are blanked out, markdown
  emphasis characters other than ``_`` are not part of words. Every replacement keeps the text's
  length, so the character offsets in :class:`Sentence` point into the caller's original string.
* Paragraphs are separated by a blank line (a line of nothing but white space).

Three views of the same boundaries: :func:`split_sentences` (:class:`Sentence` objects with words and
offsets, for measuring), :func:`sentence_texts` (the text cut into sentence strings, nothing dropped,
for editing and rejoining) and :func:`split_paragraphs`.
"""

from __future__ import annotations

import html
import re

_FOLD = str.maketrans(
    {
        "\u2019": "'",
        "\u2018": "'",
        "\u02bc": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u00a0": " ",
        "\r": " ",
    }
)
_BLOCK_TAG = re.compile(
    r"</?(?:p|br|li|div|h[1-6]|tr|td|ul|ol|blockquote|section|article|hr)\b[^<>\n]{0,200}>", re.I
)
_TAG = re.compile(r"</?[A-Za-z][^<>\n]{0,200}>")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|[A-Za-z]{2,10});")
_LINE_MARKER = r"[ \t]*(?:[-*\u2022\u25e6\u25aa\u2023+>]|\d{1,3}[.)]|#{1,6})[ \t]"
_FIRST_LINE_MARKER = re.compile(r"(?<![ \t])" + _LINE_MARKER)  # one try per run of blanks, not one per blank
_BOUNDARY = re.compile(
    r"(?=[.!?\u2026\n])"  # lets the scanner skip ordinary characters quickly
    r"(?:((?<![.!?\u2026])[.!?\u2026]++"  # a whole run of sentence punctuation (linear time on "!!!...")
    r"(?<!\b[A-Z]\.)(?<!\b(?i:mr|ms|dr|st|sr|jr|vs|cf)\.)(?<!\b(?i:mrs|rev|fig)\.)"  # titles, initials
    r"(?<!\b(?i:prof|capt)\.)(?<!\b(?i:approx)\.)(?<!\b(?i:e\.g|i\.e)\.)"
    r"[\"')\]]*+(?=\s+[^\sa-z\u00df-\u00ff]|\s*$))"  # sentence punctuation, then no lower-case word
    r"|\n[ \t]*\n"  # blank line
    r"|\n" + _LINE_MARKER + ")"  # line opening a list item, heading or quotation
)
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
"""A blank line: what separates paragraphs."""
_EMOTICON = r"|[:;=]-?[()DPdp](?!\w)"
_WORD = re.compile(r"\w++(?:['\-.]\w++)*+" + _EMOTICON)
"""A word: letters, digits, underscores with inner apostrophes, hyphens or dots (don't, well-known, e.g,
3.14, __init__), or an emoticon."""
_ASCII_WORD = re.compile(r"[a-zA-Z0-9_]++(?:['\-.][a-zA-Z0-9_]++)*+" + _EMOTICON)
"""The same as ``_WORD`` for ASCII-only text, where it is faster."""


class Sentence:
    """One sentence: its words, the punctuation it carried, and where it lies in the text."""

    __slots__ = (
        "lowers",
        "start",
        "end",
        "exclamations",
        "questions",
        "quotes",
        "terminated",
        "_text",
        "_pattern",
    )

    def __init__(
        self,
        lowers: list[str],
        text: str,
        pattern: re.Pattern[str],
        start: int,
        end: int,
        terminated: bool,
        exclamations: int,
        questions: int,
        quotes: int,
    ) -> None:
        self.lowers = lowers
        """The sentence's words, lower-cased (letters, digits, inner apostrophes/hyphens/dots; emoticons)."""
        self._text = text
        self._pattern = pattern
        self.start = start
        """Offset where the sentence's stretch of text begins (may include leading white space)."""
        self.end = end
        self.terminated = terminated
        """Whether it ended with ``.``, ``!``, ``?`` or ``…`` (not a line break or the end of the text)."""
        self.exclamations = exclamations
        """Number of ``!`` characters (VADER caps their effect at 4)."""
        self.questions = questions
        """Number of ``?`` characters."""
        self.quotes = quotes
        """Number of double quotation marks."""

    @property
    def words(self) -> list[str]:
        """The sentence's words as written (same length and order as ``lowers``)."""
        return self._pattern.findall(self._text, self.start, self.end)

    def word_spans(self) -> list[tuple[int, int]]:
        """(start, end) offsets of each word in the text, in the order of ``lowers``."""
        return [m.span() for m in self._pattern.finditer(self._text, self.start, self.end)]

    def search_opening(self, pattern: re.Pattern[str], within: int, anchor: str) -> int:
        """Offset of the first match of ``pattern`` in the sentence's first ``within`` characters, or -1;
        ``anchor`` is a string every match contains, looked for first because that is cheaper."""
        end = min(self.end, self.start + within)
        if self._text.find(anchor, self.start, end) < 0:
            return -1
        match = pattern.search(self._text, self.start, end)
        return match.start() if match else -1

    def words_before(self, offset: int) -> int:
        """How many of the sentence's words lie before text offset ``offset``."""
        return len(self._pattern.findall(self._text, self.start, offset))

    def separators(self) -> list[str]:
        """The text before each word back to the previous word (punctuation and spaces), in word order."""
        gaps, previous = [], self.start
        for start, end in self.word_spans():
            gaps.append(self._text[previous:start])
            previous = end
        return gaps

    def span(self) -> tuple[int, int]:
        """(start, end) offsets of the sentence without surrounding white space."""
        text, start, end = self._text, self.start, self.end
        while text[start] in " \t\n":
            start += 1
        while text[end - 1] in " \t\n":
            end -= 1
        return start, end

    @property
    def opens_with_quote(self) -> bool:
        """Whether a quotation mark comes before the first word (a line of dialogue)."""
        return self.quotes > 0 and self._text[self.span()[0]] == '"'


def clean_text(text: str) -> str:
    """Fold quotes, blank HTML and entities; the result has exactly ``len(text)`` characters."""
    if not text.isascii():
        text = text.translate(_FOLD)
    elif "\r" in text:
        text = text.replace("\r", " ")
    if "<" in text:
        text = _BLOCK_TAG.sub(lambda m: "\n\n" + " " * (len(m.group()) - 2), text)
        text = _TAG.sub(lambda m: " " * len(m.group()), text)
    if "&" in text:
        text = _ENTITY.sub(_entity_same_length, text)
    return text


def _entity_same_length(match: re.Match[str]) -> str:
    char = html.unescape(match.group()).translate(_FOLD)
    if len(char) != 1 or not char.isprintable():
        char = " "
    return char + " " * (len(match.group()) - 1)


def _word_pattern(text: str) -> re.Pattern[str]:
    return _ASCII_WORD if text.isascii() else _WORD


def split_sentences(text: str) -> list[Sentence]:
    """Sentences of cleaned ``text`` (see :func:`clean_text`); stretches without words are dropped."""
    sentences: list[Sentence] = []
    pattern = _word_pattern(text)
    find_words = pattern.findall
    lowered: str | None = text.lower()
    if len(lowered) != len(text):  # a rare letter whose lower case is longer ("İ"): lower word by word
        lowered = None
    count = text.count
    marks = ("!" in text, "?" in text, '"' in text)
    bounds = [
        (m.end(), m.end(), True) if m.group(1) else (m.start(), m.end(), False)
        for m in _BOUNDARY.finditer(text)
    ]
    bounds.append((len(text), len(text), False))
    first_line = _FIRST_LINE_MARKER.match(text)
    start = first_line.end() if first_line else 0
    for end, next_start, terminated in bounds:
        if lowered is not None:
            lowers = find_words(lowered, start, end)
        else:
            lowers = [w.lower() for w in find_words(text, start, end)]
        if lowers:
            sentences.append(
                Sentence(
                    lowers,
                    text,
                    pattern,
                    start,
                    end,
                    terminated,
                    count("!", start, end) if marks[0] else 0,
                    count("?", start, end) if marks[1] else 0,
                    count('"', start, end) if marks[2] else 0,
                )
            )
        start = next_start
    return sentences


def sentence_texts(text: str) -> list[str]:
    """``text`` cut at :func:`split_sentences`' boundaries into stripped strings, for editing and
    rejoining: the sentences' own text, with nothing dropped.

    A list marker stays with its item, and a stretch without words (the ")." after a quoted
    "(...)") stays with the sentence before it (the one after, at the start), so
    ``" ".join(sentence_texts(p))`` is ``p`` with the white space between sentences made single
    spaces. Each piece holds the words of exactly one of :func:`split_sentences`' sentences."""
    first_line = _FIRST_LINE_MARKER.match(text)
    opening = first_line.end() if first_line else 0
    cuts = [cut for m in _BOUNDARY.finditer(text) if (cut := m.end() if m.group(1) else m.start()) > opening]
    has_words = _word_pattern(text).search
    pieces: list[str] = []
    loose = ""
    for start, end in zip([0, *cuts], [*cuts, len(text)]):
        piece = text[start:end].strip()
        if not has_words(piece):
            loose = f"{loose} {piece}".strip()
        elif pieces or not loose:
            pieces.append(piece)
        else:
            pieces.append(f"{loose} {piece}")
            loose = ""
        if pieces and loose:
            pieces[-1] = f"{pieces[-1]} {loose}"
            loose = ""
    return pieces if pieces or not loose else [loose]


def split_paragraphs(text: str) -> list[str]:
    """Paragraphs separated by blank lines, stripped, empty ones dropped."""
    return [p.strip() for p in PARAGRAPH_BREAK.split(text) if p.strip()]
