"""Labelled validity pairs: in each pair text A clearly has more of the dimension than text B.

Written for ResonanceOS. The extractor must rank every pair the right way round, by a margin.
"""

from __future__ import annotations

import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiling.hrv_extractor import HRVExtractor

MARGIN = 0.05

PAIRS: dict[str, list[tuple[str, str]]] = {
    "sentence_variance": [
        (
            "Stop. The committee met for nearly four hours on Tuesday and still could not agree on a budget. "
            "Why? Nobody would say, and the chair left the building without a word to anyone waiting outside.",
            "The committee met on Tuesday at noon. They talked about the budget for hours. "
            "The chair did not agree with them. Then she left the room without a word.",
        ),
        (
            "Rain. It fell on the roofs and the gardens and the long grey road that ran down to the harbour all night. Silence.",
            "Rain fell on the roofs. It fell on the gardens too. It fell on the grey road. The town was quiet.",
        ),
        (
            "Yes. We will ship the release on Friday once the last integration test passes on every platform we support. Done.",
            "We will ship on Friday. The tests must pass first. Every platform needs a check. Then we are done.",
        ),
    ],
    "emotional_valence": [
        (
            "What a wonderful morning. The children laughed and the garden looked beautiful in the sun.",
            "What a terrible morning. The children cried and the garden looked ruined after the storm.",
        ),
        (
            "I love this new team. Everyone is kind, helpful and genuinely happy to share good ideas.",
            "I hate this new team. Everyone is rude, useless and openly hostile to other people's ideas.",
        ),
        (
            "The service was excellent and the food was delicious.",
            "The service was awful and the food was disgusting.",
        ),
        (
            "The meeting is at three o'clock in room twelve.",
            "The meeting is at three o'clock in room twelve, sadly, after that horrible failure.",
        ),
        (
            "The food was good and the staff were friendly.",
            "The food was not good and the staff were not friendly.",
        ),
    ],
    "emotional_intensity": [
        (
            "This is ABSOLUTELY INCREDIBLE! I am thrilled, overjoyed and so deeply grateful!!!",
            "This is fine. I am pleased with it and grateful.",
        ),
        (
            "I am furious. This is a disgusting, outrageous betrayal and I will never forgive it!",
            "I am a little annoyed. This was not what I expected.",
        ),
        (
            "The crash was horrific, the screams were terrifying, and the grief was unbearable.",
            "The train left the station at nine and arrived at the coast shortly after noon.",
        ),
        (
            "We WON the final! Everyone was SO happy!",
            "We won the final. Everyone was happy.",
        ),
        (  # exclamatory triumph over its flat paraphrase (issue 14), though VADER reads "crushed" as negative
            "We crushed it, we smashed every record, and the crowd went absolutely wild!",
            "We did well, we set new records, and the crowd cheered.",
        ),
        (
            "Victory! After ten years of waiting, we are finally champions, and I cannot stop grinning!",
            "After ten years, we won the championship, and I am content.",
        ),
        (
            "Goal! He buried it in the top corner and the stadium shook!",
            "He scored a goal in the corner and the spectators clapped.",
        ),
    ],
    "assertiveness_index": [
        (
            "This approach clearly works. The results certainly prove it, and we must adopt it now. Of course it is right.",
            "This approach might work. The results perhaps suggest it, and we could possibly adopt it. It seems right.",
        ),
        (
            "Obviously the bridge is safe. Engineers have definitely shown that it will hold.",
            "The bridge is probably safe. Engineers think it may hold, although that is somewhat unclear.",
        ),
        (
            "Indeed, the answer is always the same: the tests must pass before release.",
            "I think the answer is usually the same, roughly: tests should perhaps pass before release.",
        ),
    ],
    "curiosity_index": [
        (
            "Why do cats purr? Have you ever wondered what the sound really means? Scientists are still puzzled by it.",
            "Cats purr when they are content. The sound is made by the muscles of the larynx.",
        ),
        (
            "What if the universe is stranger than we imagine? I wonder what we will discover next.",
            "The universe is very large. We will keep measuring it with new telescopes.",
        ),
        (
            "How does a bee find its way home? The answer is a mystery worth exploring.",
            "A bee finds its way home using the position of the sun.",
        ),
    ],
    "metaphor_density": [
        (
            "Her voice was like a warm blanket. The city was a sea of lights, and time moved as slow as honey.",
            "Her voice was quiet and warm. The city had many lights, and the evening passed slowly.",
        ),
        (
            "He fought like a lion, as if the whole world rested on his shoulders.",
            "He fought hard, because the result mattered to him.",
        ),
        (
            "The news hit the market like a storm, and a wave of panic swept through the traders.",
            "The news reached the market in the morning and many traders sold their shares.",
        ),
        (
            "Time is a thief. Grief was an ocean, and the market was a roaring lion that swallowed small companies whole.",
            "Time passes quickly. Grief was overwhelming, and the market was strong enough to ruin small companies.",
        ),
        (
            "Prices soared all spring, and doubt gnawed at every buyer.",
            "Prices rose sharply all spring, and every buyer was uncertain.",
        ),
    ],
    "storytelling_index": [
        (
            "Yesterday I walked down to the harbour. Suddenly she appeared and smiled at me. "
            '"You came back," she said. Later we talked for hours.',
            "The harbour is located on the eastern side of the city. It handles container traffic "
            "and is managed by a public authority.",
        ),
        (
            "When I was a boy, my grandfather took me fishing. One morning he caught a huge pike and we laughed all the way home.",
            "Fishing requires a licence in most regions. Pike are common in large lakes and slow rivers.",
        ),
        (
            "She opened the door, looked around and then froze. Someone had been there before her.",
            "Open the door, look around and check the room. Confirm that the area is safe before entering.",
        ),
    ],
    "active_voice_ratio": [
        (
            "The team wrote the report. The manager reviewed it and the board approved the budget.",
            "The report was written by the team. It was reviewed by the manager and the budget was approved by the board.",
        ),
        (
            "We fixed the bug and shipped the patch on Monday.",
            "The bug was fixed and the patch was shipped on Monday.",
        ),
        (
            "The chef cooked the meal while guests watched the game.",
            "The meal was being cooked while the game was watched by the guests.",
        ),
    ],
}


@pytest.fixture(scope="module")
def extractor() -> HRVExtractor:
    return HRVExtractor()


@pytest.mark.parametrize(
    ("dimension", "more", "less"),
    [(dim, a, b) for dim, pairs in PAIRS.items() for a, b in pairs],
    ids=[f"{dim}-{i}" for dim, pairs in PAIRS.items() for i in range(len(pairs))],
)
def test_pair_is_ranked_the_right_way(extractor: HRVExtractor, dimension: str, more: str, less: str) -> None:
    k = HRV_DIMENSIONS.index(dimension)
    high, low = extractor.extract(more)[k], extractor.extract(less)[k]
    assert high > low + MARGIN, f"{dimension}: expected {high:.3f} > {low:.3f} + {MARGIN}"


def test_every_dimension_has_at_least_three_pairs() -> None:
    assert set(PAIRS) == set(HRV_DIMENSIONS)
    assert all(len(pairs) >= 3 for pairs in PAIRS.values())


def test_valence_poles_and_neutral_midpoint(extractor: HRVExtractor) -> None:
    k = HRV_DIMENSIONS.index("emotional_valence")
    assert extractor.extract("This is a wonderful, happy, beautiful day.")[k] > 0.75
    assert extractor.extract("This is a horrible, sad, miserable day.")[k] < 0.25
    assert extractor.extract("The table has four legs and a drawer.")[k] == pytest.approx(0.5)


def test_intensity_ignores_sign(extractor: HRVExtractor) -> None:
    k = HRV_DIMENSIONS.index("emotional_intensity")
    joy = extractor.extract("I am absolutely thrilled and overjoyed!")[k]
    rage = extractor.extract("I am absolutely furious and disgusted!")[k]
    flat = extractor.extract("I am at the office until five.")[k]
    assert abs(joy - rage) < 0.15
    assert min(joy, rage) > flat + 0.3
