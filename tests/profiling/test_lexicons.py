"""The lexicon table: VADER and lemminflect data loaded, our lists parsed, phrases indexed."""

from __future__ import annotations

from resonance_os.profiling.lexicons import (
    FLAG_BE,
    FLAG_BOOSTER,
    FLAG_HEDGE,
    FLAG_NOT_PARTICIPLE,
    FLAG_PARTICIPLE,
    FLAG_PAST,
    FLAG_PHRASE,
    FLAG_VADER,
    get_lexicon,
)


def test_lexicon_is_built_once_per_process() -> None:
    assert get_lexicon() is get_lexicon()


def test_vader_lexicon_is_complete() -> None:
    lexicon = get_lexicon()
    assert len(lexicon.valence) > 7000
    assert lexicon.valence["good"] > 0 > lexicon.valence["horrible"]
    assert lexicon.flags["good"] & FLAG_VADER


def test_lemminflect_forms_including_overrides() -> None:
    lexicon = get_lexicon()
    assert len(lexicon.past_participles) > 6500 and len(lexicon.past_tense) > 6500
    assert {"taken", "written", "used", "run"} <= lexicon.past_participles  # "run" comes from the overrides
    assert {"took", "wrote", "ran"} <= lexicon.past_tense
    assert lexicon.flags["overridden"] & FLAG_PARTICIPLE
    assert lexicon.flags["went"] & FLAG_PAST and not lexicon.flags["went"] & FLAG_PARTICIPLE
    assert not lexicon.flags.get("been", 0) & FLAG_PARTICIPLE and lexicon.flags["been"] & FLAG_BE


def test_word_lists_and_phrases() -> None:
    lexicon = get_lexicon()
    assert lexicon.flags["perhaps"] & FLAG_HEDGE
    assert lexicon.flags["clearly"] & FLAG_BOOSTER
    assert lexicon.flags["tired"] & FLAG_NOT_PARTICIPLE
    assert lexicon.flags["of"] & FLAG_PHRASE
    assert ((), FLAG_BOOSTER) in lexicon.phrases[("of", "course")]
    assert (("opinion",), FLAG_HEDGE) in lexicon.phrases[("in", "my")]
