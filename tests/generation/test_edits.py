"""Each refiner edit is a pure text transform that moves its HRV dimension the measured way."""

import random

import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation import edits as E
from resonance_os.profiling.hrv_extractor import HRVExtractor

extractor = HRVExtractor()
BASE = "Remote work shapes the daily routine for people who work from home."


def measure(text: str, dimension: str) -> float:
    return extractor.extract(text)[HRV_DIMENSIONS.index(dimension)]


def test_active_passive_round_trip():
    passive = E.to_passive("The team reshapes the weekly plan in small and steady steps.")
    assert passive == "The weekly plan is reshaped by the team in small and steady steps."
    assert E.to_active(passive) == "The team reshapes the weekly plan in small and steady steps."
    past = E.to_passive("That winter, Maya redrew the old assumptions.")
    assert past == "That winter, the old assumptions were redrawn by Maya."
    assert E.to_active("Perhaps the budget for next year may be guided by most readers.") == (
        "Perhaps most readers may guide the budget for next year."
    )
    assert E.to_active("Remote work shapes the plan.") is None


@pytest.mark.parametrize(
    ("edit", "text", "dimension", "sign"),
    [
        (lambda s: E.to_passive(s), "The team reshapes the weekly plan.", "active_voice_ratio", -1),
        (lambda s: E.to_question(s), BASE, "curiosity_index", +1),
        (lambda s: E.add_tail(s, "as steady as a metronome"), BASE, "metaphor_density", +1),
        (lambda s: E.add_opener(s, "Perhaps"), BASE, "assertiveness_index", -1),
        (lambda s: E.add_opener(s, "In fact,"), BASE, "assertiveness_index", +1),
        (lambda s: E.to_past(s), BASE, "storytelling_index", +1),
        (lambda s: E.add_opener(s, "One morning,"), BASE, "storytelling_index", +1),
        (lambda s: E.swap_verb(s, "neutral", "positive", random.Random(0)), BASE, "emotional_valence", +1),
        (lambda s: E.swap_verb(s, "neutral", "negative", random.Random(0)), BASE, "emotional_valence", -1),
        (
            lambda s: E.set_exclamation(s, True),
            "The result is wonderful for the team.",
            "emotional_intensity",
            +1,
        ),
        (
            lambda s: E.swap_adjective(s, "positive_mild", "positive_strong", random.Random(0)),
            "The result is good for the team.",
            "emotional_intensity",
            +1,
        ),
    ],
)
def test_edit_moves_its_dimension(edit, text, dimension, sign):
    edited = edit(text)
    assert edited and edited != text
    assert sign * (measure(edited, dimension) - measure(text, dimension)) > 0.05, edited


def test_inverse_edits_undo():
    question = E.to_question(BASE)
    assert question == "Does remote work shape the daily routine for people who work from home?"
    assert E.to_statement(question) == BASE
    past = E.to_past(BASE)
    assert past == "Remote work shaped the daily routine for people who work from home."
    assert E.to_present(past) == BASE
    assert E.remove_hedge("Perhaps remote work shapes the plan.") == "Remote work shapes the plan."
    assert E.remove_tail(BASE[:-1] + ", as steady as a metronome.", ("as steady as a metronome",)) == BASE


def test_split_and_merge_change_cadence():
    merged = E.merge("Remote work shapes the plan.", "The team follows.")
    assert merged == "Remote work shapes the plan, and the team follows."
    assert E.split(merged) == ["Remote work shapes the plan.", "The team follows."]
    assert E.merge('"We kept going," Maya said.', "The team follows.") is None


def test_edits_leave_other_text_alone():
    text = "Ukulele ensembles tune by ear."
    for edit in (
        E.to_active,
        E.to_passive,
        E.remove_hedge,
        E.remove_booster,
        E.remove_time_marker,
        E.to_statement,
    ):
        assert edit(text) is None
