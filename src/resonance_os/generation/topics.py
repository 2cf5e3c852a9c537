"""Prompt handling: validation and the topic phrases the writer weaves into every paragraph."""

from __future__ import annotations

import re
import unicodedata

from resonance_os.core.errors import ValidationError

MAX_PROMPT_CHARS = 4000
"""Longest prompt accepted (characters, after stripping surrounding whitespace, and again after NFKC)."""

MAX_BRIEF_CHARS = 400
"""Longest part of the prompt a language-model backend sees (``model_brief``): its prompt tokens are
processed for every candidate, so a long brief costs seconds per paragraph without writing better."""

MAX_TOPIC_WORD_CHARS = 40
"""Longer words are cut to this many characters in topic phrases (they are woven into every paragraph)."""

_STOPWORDS = frozenset(
    """a an the and or but nor so yet of to in on at by for with from into onto over under about
    above below between among through during before after since until while as than then that this
    these those there here it its it's is are was were be been being am do does did done have has had
    having i me my mine we us our ours you your yours he him his she her hers they them their theirs
    what which who whom whose when where why how all any both each few more most other some such no
    not only own same too very can will just should would could may might must shall also please
    write writing written compose draft create make give tell explain describe discuss article post
    blog essay paragraph paragraphs piece story text short long brief about regarding concerning
    topic topics one two three four five several many much way ways thing things something anything
    everything nothing why let lets let's want need help using use used our via per vs etc
    future importance benefits benefit role impact history value rise state power guide tips basics
    pros cons introduction overview matter matters early late today really""".split()
)
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_BREAKS = re.compile(r"[,.;:!?()\u2014\u2013/&+=]|\s-\s")
_MARKUP = re.compile(r"<[^>]{0,200}>|&[a-zA-Z]{2,8};|[*_`#>\[\]{}|~^\\]")


def validate_prompt(prompt: object) -> str:
    """Return the stripped prompt, or raise ``ValidationError`` naming the problem and the fix.

    Accepts any non-empty string of at most ``MAX_PROMPT_CHARS`` characters.
    """
    if not isinstance(prompt, str):
        raise ValidationError(f"prompt must be a string, got {type(prompt).__name__}; pass the topic as text")
    text = prompt.strip()
    if not text:
        raise ValidationError("prompt is empty; pass a few words describing the topic, e.g. 'remote work'")
    if len(text) > MAX_PROMPT_CHARS:
        raise ValidationError(
            f"prompt is {len(text)} characters, over the {MAX_PROMPT_CHARS}-character limit; "
            "shorten it to a topic or a short brief"
        )
    normalized = normalized_length(text)
    if normalized > MAX_PROMPT_CHARS:
        raise ValidationError(
            f"prompt is {normalized} characters after Unicode normalisation (NFKC expands some "
            f"characters, e.g. U+FDF2 into 4), over the {MAX_PROMPT_CHARS}-character limit; "
            "shorten it to a topic or a short brief"
        )
    return text


def normalized_length(text: str) -> int:
    """Characters in ``text`` after NFKC normalisation: what the writer actually processes."""
    return len(unicodedata.normalize("NFKC", text))


def model_brief(prompt: str, limit: int = MAX_BRIEF_CHARS) -> str:
    """The prompt as a language model is shown it: NFKC-normalised, cut at a word boundary to at most
    ``limit`` characters, so that a paragraph's model cost does not grow with the prompt."""
    text = " ".join(unicodedata.normalize("NFKC", prompt).split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0]
    return cut if 0 < len(cut) <= limit else text[:limit]


def _clean(prompt: str) -> str:
    text = unicodedata.normalize("NFKC", prompt)
    text = _MARKUP.sub(" ", text)
    return text.replace("’", "'").replace("“", " ").replace("”", " ").replace('"', " ")


def topic_phrases(prompt: str, limit: int = 4) -> list[str]:
    """Up to ``limit`` topic phrases from ``prompt``: runs of 1-3 adjacent content words, lower-cased.

    Markup, quotes and punctuation are dropped so the phrases fit any grammar slot. Longer, earlier
    runs come first. A prompt with no content word yields its longest word (or ``"this topic"``).
    """
    text = _clean(prompt)
    runs: list[list[str]] = []
    for segment in _BREAKS.split(text):
        current: list[str] = []
        for match in _WORD.finditer(segment):
            word = match.group(0).strip("'-")[:MAX_TOPIC_WORD_CHARS]
            lower = word.lower()
            if len(lower) < 3 or lower in _STOPWORDS:
                if current:
                    runs.append(current)
                current = []
                continue
            current.append(word if word.isupper() else lower)
        if current:
            runs.append(current)
    phrases: list[str] = []
    for run in runs:
        for start in range(0, len(run), 3):
            phrase = " ".join(run[start : start + 3])
            if phrase not in phrases:
                phrases.append(phrase)
    if not phrases:
        words = [m.group(0).lower()[:MAX_TOPIC_WORD_CHARS] for m in _WORD.finditer(text)]
        phrases = [max(words, key=len)] if words else ["this topic"]
    ranked = sorted(enumerate(phrases), key=lambda item: (-len(item[1].split()), item[0]))
    return [phrase for _, phrase in ranked[:limit]]


def topic_words(phrases: list[str]) -> set[str]:
    """The individual lower-cased words of ``phrases`` (what 'on topic' checks look for)."""
    return {word.lower() for phrase in phrases for word in phrase.split()}
