"""ReDoS guard: every module-level regular expression that reads tenant text (generation, profiling,
quality, the service) runs in time linear in its input on worst-case strings, and so does measuring a
text and reading a prompt's topics.

No clock thresholds: each case is timed at n and 8n characters, and its growth is compared with the
growth of a linear scan (``LINEAR_BASELINE``) of the same strings timed alongside: a linear pattern
grows about as much (excess ~1), a quadratic one 8 times as much; the bound is 3. The worst
cases repeat short atoms built from what the patterns look for (words they name, punctuation, markup,
spaces, line breaks, the NFKC-expanding U+FDF2), searched through and then with a NUL appended, which
is what makes a backtracking pattern retry from every position. The default run tries the atoms that
found real quadratics here (blank runs across lines, unclosed brackets, dotted words); the slow run
tries every atom and pair of atoms.
"""

from __future__ import annotations

import importlib
import itertools
import math
import pkgutil
import re
import time
import unicodedata

import pytest

PACKAGES = ("core", "generation", "profiling", "quality", "api", "profiles")
SIZE = 400
GROWTH = 8
MAX_EXCESS = 3.0
"""Allowed growth beyond a linear scan's from n to 8n characters (a quadratic pattern shows about 8)."""
PAIRS = 4
ATTEMPTS = 3
LINEAR_BASELINE = re.compile(r"\w+|\W+")

ATOMS = [
    " ",
    "a",
    "A",
    "aa ",
    ".",
    ". ",
    ", ",
    "'",
    "a'",
    "-",
    " - ",
    "\n",
    " \n",
    "\n\n ",
    "\t1",
    "1. ",
    "<a ",
    "&a",
    "*",
    "Mr. ",
    "a.",
    "was ",
    "been ",
    "is a ",
    ", like a ",
    "as if ",
    ", and a",
    "; ",
    "here is ",
    "the paragraph ",
    "paragraph: ",
    "ly ",
    "<p ",
    "&#1",
    ":-",
    "ab'c-d.e",
    "[a ",
]
ATOMS.append(unicodedata.normalize("NFKC", "\ufdf2"))
QUICK_ATOMS = [" ", "aa ", "a.", " \n", "\t1", ", and a", "<a ", "&a", "[a ", "ab'c-d.e", ATOMS[-1]]
"""The default run's worst cases; the slow run adds every atom and pairs of atoms."""


def _patterns() -> list[tuple[str, re.Pattern]]:
    found: dict[str, re.Pattern] = {}
    for package in PACKAGES:
        root = importlib.import_module(f"resonance_os.{package}")
        for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
            if info.name.endswith("migrations.env") or ".migrations." in info.name:
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                values = value if isinstance(value, (tuple, list)) else (value,)
                for index, item in enumerate(values):
                    candidates = item if isinstance(item, tuple) else (item,)
                    for pattern in candidates:
                        if isinstance(pattern, re.Pattern):
                            found.setdefault(f"{info.name}.{name}[{index}]", pattern)
    return sorted(found.items())


def _words_of(pattern: re.Pattern) -> list[str]:
    """Literal words a pattern names ('like', 'paragraph', ...), as atoms for its worst cases."""
    words = re.findall(r"(?<![\\\w])[a-z]{2,}(?:'[a-z]+)?", pattern.pattern)
    return sorted(set(words))[:12]


def _cases(pattern: re.Pattern, exhaustive: bool) -> list[str]:
    words = _words_of(pattern)
    own = [f"{w} " for w in words] + [f", {w} a" for w in words] + [f"\n{w}" + " " * 3 for w in words]
    if not exhaustive:
        return QUICK_ATOMS + own
    pairs = [a + b for a, b in itertools.product(ATOMS[:16], ATOMS[:16]) if a != b]
    return ATOMS + own + pairs


def _timed(work, text: str) -> float:
    start = time.perf_counter()
    work(text)
    return time.perf_counter() - start


def _growth(work, atom: str) -> float:
    """How much faster than a linear scan ``work``'s time grows from n to 8n characters of ``atom``
    repeated: (best time at 8n / best time at n) for ``work``, over interleaved runs, divided by the same
    for :data:`LINEAR_BASELINE` on the same strings, so the machine's own growth cancels (best times:
    interruptions only ever add time). About 1 for a linear pattern, 8 for a quadratic one. Up to
    ``ATTEMPTS`` measurements decide when the first looks superlinear (a busy CI machine once put a
    linear pattern at 3.4 in one pair of them)."""
    small = (atom * (SIZE // len(atom) + 1))[:SIZE]
    large = (atom * (SIZE * GROWTH // len(atom) + 1))[: SIZE * GROWTH]
    baseline = _exercise(LINEAR_BASELINE)
    excess = []
    for _attempt in range(ATTEMPTS):
        best = {key: math.inf for key in ("ours_small", "ours_large", "base_small", "base_large")}
        for _ in range(PAIRS):
            best["ours_small"] = min(best["ours_small"], _timed(work, small))
            best["ours_large"] = min(best["ours_large"], _timed(work, large))
            best["base_small"] = min(best["base_small"], _timed(baseline, small))
            best["base_large"] = min(best["base_large"], _timed(baseline, large))
        ours = best["ours_large"] / max(best["ours_small"], 1e-9)
        linear = best["base_large"] / max(best["base_small"], 1e-9)
        excess.append(ours / linear)
        if excess[-1] < MAX_EXCESS:
            break
    return min(excess)


def _exercise(pattern: re.Pattern):
    def work(text: str) -> None:
        for _ in pattern.finditer(text):
            pass
        pattern.search(text + "\x00")

    return work


def _worst(name: str, pattern: re.Pattern, exhaustive: bool) -> tuple[float, str]:
    work = _exercise(pattern)
    return max((_growth(work, atom), atom) for atom in _cases(pattern, exhaustive))


PATTERNS = _patterns()


def test_the_scan_finds_the_text_patterns():
    names = {name for name, _ in PATTERNS}
    assert len(PATTERNS) >= 20
    assert any(".core.text._BOUNDARY" in n for n in names)
    assert any(".generation.edits._SIMILE_TAIL" in n for n in names)


@pytest.mark.parametrize("name,pattern", PATTERNS, ids=[name for name, _ in PATTERNS])
def test_pattern_is_linear_on_worst_cases(name, pattern):
    ratio, atom = _worst(name, pattern, exhaustive=False)
    assert ratio < MAX_EXCESS, (
        f"{name} grows {ratio:.1f}x more than a linear scan from {SIZE} to {SIZE * GROWTH} chars of {atom!r}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("name,pattern", PATTERNS, ids=[name for name, _ in PATTERNS])
def test_pattern_is_linear_on_every_fuzz_case(name, pattern):
    ratio, atom = _worst(name, pattern, exhaustive=True)
    assert ratio < MAX_EXCESS, (
        f"{name} grows {ratio:.1f}x more than a linear scan from {SIZE} to {SIZE * GROWTH} chars of {atom!r}"
    )


def test_a_known_quadratic_pattern_is_caught():
    """The guard itself: a nested lazy pattern like the old passive rule fails the same check."""
    quadratic = re.compile(r"\b(?:was|were)\b.*?\b\w+ed\b.*?\.")
    assert _growth(_exercise(quadratic), "was ") > MAX_EXCESS
    multiline = re.compile(r"^\s*(?:sure|certainly)\s*[,!.:]", re.MULTILINE)  # the meta-text rule before
    assert _growth(_exercise(multiline), " \n") > MAX_EXCESS


def test_measuring_text_and_reading_topics_are_linear():
    from resonance_os.generation.topics import topic_phrases
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    extractor = HRVExtractor()
    for atom in ("was ", "a, ", "like a ", ATOMS[-1], "Mr. A. ", "it is a "):
        assert _growth(extractor.analyze, atom) < MAX_EXCESS, atom
        assert _growth(topic_phrases, atom) < MAX_EXCESS, atom
