"""The built-in composer never opens a sentence with words the quality gate reads as an assistant's preamble."""

from __future__ import annotations

from resonance_os.generation.backends.phrase_bank import load_phrase_bank
from resonance_os.quality.repetition import repetition_report


def test_stance_openers_are_not_meta_text() -> None:
    bank = load_phrase_bank()
    openers = [*bank.hedges["openers"], *bank.boosters["openers"]]
    flagged = [o for o in openers if repetition_report(f"{o} the new garden opened in spring.").meta_text]
    assert flagged == []  # "Of course," at a paragraph's start zeroed the writer's own reward
