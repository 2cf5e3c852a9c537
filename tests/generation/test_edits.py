"""Edit operators on real English sentences: exact outputs where they apply, None where unsafe."""

import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.generation import edits as E
from resonance_os.profiling.hrv_extractor import HRVExtractor

extractor = HRVExtractor()


def measure(text: str, dimension: str) -> float:
    return extractor.extract(text)[HRV_DIMENSIONS.index(dimension)]


@pytest.mark.parametrize(
    ("edit", "sentence", "expected"),
    [
        (E.to_active, "The module is imported by the interpreter.", "The interpreter imports the module."),
        (E.to_passive, "The interpreter imports the module.", "The module is imported by the interpreter."),
        (E.to_passive, "The team built the bridge.", "The bridge was built by the team."),  # irregular
        (
            E.to_passive,
            "Finally, the company president called Sam into his office.",
            "Finally, Sam was called by the company president into his office.",
        ),
        (
            E.to_passive,
            "The manager thanked them for their work.",
            "They were thanked by the manager for their work.",
        ),
        (E.to_question, "The result is an integer.", "Is the result an integer?"),
        (E.to_statement, "Is the result an integer?", "The result is an integer."),
        (
            E.add_intensifier,
            "This step is important for the test.",
            "This step is very important for the test.",
        ),
        (E.remove_intensifier, "It is a very important step.", "It is an important step."),
        (E.remove_intensifier, "It has an incredibly rich history.", "It has a rich history."),
        (E.remove_intensifier, "They worked really hard.", "They worked hard."),
        (lambda s: E.drop_adjective(s, +1), "They built a beautiful garden.", "They built a garden."),
        (lambda s: E.drop_adjective(s, -1), "An awful storm hit the town.", "A storm hit the town."),
        (
            E.add_intensifier,
            "The team felt nervous before the launch.",
            "The team felt very nervous before the launch.",
        ),
        (
            lambda s: E.add_opener(s, "In fact,"),
            "The call returns a new list.",
            "In fact, the call returns a new list.",
        ),
        (
            lambda s: E.remove_opener(s, E.HEDGE_OPENERS),
            "Generally, the call returns a new list.",
            "The call returns a new list.",
        ),
        (
            lambda s: E.add_simile(s, "a recipe followed step by step"),
            "The function runs each statement in order.",
            "The function runs each statement in order, like a recipe followed step by step.",
        ),
        (
            E.remove_simile,
            "The function runs each statement in order, like a recipe followed step by step.",
            "The function runs each statement in order.",
        ),
        (
            E.split,
            "The list is sorted in place; it returns nothing useful.",
            ["The list is sorted in place.", "It returns nothing useful."],
        ),
        (
            E.split,
            "The plan looked simple on paper, but the team was not ready for the first storm.",
            ["The plan looked simple on paper.", "But the team was not ready for the first storm."],
        ),
        (  # a single dash before a clause; contractions are no quotes
            E.split,
            "It's not easy to know which choice is best – it involves many factors at once.",
            ["It's not easy to know which choice is best.", "It involves many factors at once."],
        ),
        (  # a connective after a semicolon opens the new sentence
            E.split,
            "A bright future promises to shape our lives; however, this promise has its costs.",
            ["A bright future promises to shape our lives.", "However, this promise has its costs."],
        ),
        (  # "I" and a contraction open the clause after ", but" and after a semicolon
            E.split,
            "I was inspired by this scene, but I'll make sure to keep it simple and focused.",
            ["I was inspired by this scene.", "But I'll make sure to keep it simple and focused."],
        ),
        (
            E.split,
            "It's not just transportation; it's a way for people to connect and share.",
            ["It's not just transportation.", "It's a way for people to connect and share."],
        ),
        (  # a past form with an object after it is a verb, not a participle
            E.split,
            "The sun was finally setting, and the scent of basil filled the air around us.",
            ["The sun was finally setting.", "The scent of basil filled the air around us."],
        ),
        (
            lambda s: E.swap_word(s, E.VALENCE_SWAPS, True),
            "That answer is wrong.",
            "That answer is incorrect.",
        ),
        (
            lambda s: E.swap_word(s, E.INTENSITY_SWAPS, False),
            "They love the garden in spring.",
            "They enjoy the garden in spring.",
        ),
        (  # the article agrees with the new word
            lambda s: E.swap_word(s, E.INTENSITY_SWAPS, False),
            "Libraries have become a vital part of town life.",
            "Libraries have become an important part of town life.",
        ),
        (
            lambda s: E.swap_word(s, E.INTENSITY_SWAPS, True),
            "An important step comes first.",
            "A vital step comes first.",
        ),
        (  # "hard" as an adjective still swaps (as an adverb it does not: test_declines_where_unsafe)
            lambda s: E.swap_word(s, E.INTENSITY_SWAPS, True),
            "The first winter was hard for everyone.",
            "The first winter was difficult for everyone.",
        ),
    ],
)
def test_exact_outputs_on_real_sentences(edit, sentence, expected):
    assert edit(sentence) == expected


def test_merge_joins_two_statements_with_a_semicolon():
    assert E.merge("The list is sorted.", "It returns nothing.") == "The list is sorted; it returns nothing."
    assert E.merge('"Stop," she said.', "It returns nothing.") is None


@pytest.mark.parametrize(
    ("edit", "sentence"),
    [
        (E.to_passive, "The function returns the value of the key."),  # object runs on with "of"
        (E.to_active, "The value was computed by a function that runs twice."),  # agent with a clause
        (E.to_passive, "He said that it works."),  # no direct object
        (E.to_passive, "The dog bit me and ran away."),  # "ran away" would get the new subject
        (E.to_passive, "And so, the story begins all over again."),  # "all over again" is no object
        (E.to_passive, "This research suggests that even minor deficiencies matter."),  # a clause
        (
            E.to_passive,
            "The government recently implemented a project aimed at repairs.",
        ),  # adverb, participle
        (E.to_question, "What is the point."),  # not a noun-phrase subject
        (E.to_statement, "Why is it slow?"),  # wh-question
        (E.split, "It works, and it is fast enough."),  # right part too short
        (
            E.split,
            "My mind went back to that summer - a quiet lake that had waited for years.",
        ),  # noun phrase
        (E.split, "And now here it is – a virtual reality experience tailored for our team."),  # participle
        (E.split, "This trend is tied to our love of games – a shared desire to explore them."),  # infinitive
        (E.split, "The town - a small place by the sea - has grown quickly since then."),  # an aside
        (  # "woven" is only a participle: "a tapestry woven from ..." is a noun phrase
            E.split,
            "Lena knew that she was not alone, but a tapestry woven from threads of many lives.",
        ),
        (E.split, "She said 'we are done here', and it was over for all of us."),  # quoted speech
        (lambda s: E.add_opener(s, "In fact,"), "Python raises an error."),  # a name would be lower-cased
        (lambda s: E.add_opener(s, "In fact,"), "Indeed, the call returns."),  # already has an opener
        # an introductory phrase or clause, or a connective set off by commas (seen in model drafts)
        (
            lambda s: E.add_opener(s, "In general,"),
            "In the heart of urban landscapes lie vibrant cities that have always been at odds.",
        ),
        (
            lambda s: E.add_opener(s, "Of course,"),
            "In many cities across the globe, however, this mission has been put on hold.",
        ),
        (
            lambda s: E.add_opener(s, "In most cases,"),
            "As we look towards the future of these resources, it becomes clear that they matter.",
        ),
        (
            lambda s: E.add_opener(s, "Clearly,"),
            "The benefits outweigh the drawbacks, however, for most towns.",
        ),
        (lambda s: E.add_opener(s, "In fact,"), '"We kept going," Maya said.'),  # dialogue
        (E.add_intensifier, "The call uses a common type."),  # technical adjective
        (E.add_intensifier, "The answer is perfect."),  # takes no degree
        (E.add_intensifier, "It was a huge relief for everyone."),  # already extreme: not "very huge"
        (E.add_intensifier, "This is vital because the default is to search locally."),  # not "very vital"
        (lambda s: E.drop_adjective(s, 0), "It was an amazing experience."),  # the adjective is the point
        (lambda s: E.drop_adjective(s, 0), "The common good matters."),  # a noun here
        (lambda s: E.drop_adjective(s, -1), "They built a beautiful garden."),  # positive, not negative
        (E.remove_intensifier, "It is the very first item."),
        # a swap needs the word class of its pair: the noun "love", the verb "concerns", no "most hard"
        (lambda s: E.swap_word(s, E.INTENSITY_SWAPS, False), "A mother's love for her children was real."),
        (lambda s: E.swap_word(s, E.INTENSITY_SWAPS, True), "It concerns the whole team today."),
        (lambda s: E.swap_word(s, E.VALENCE_SWAPS, True), "This is the most difficult part of the job."),
        (lambda s: E.swap_word(s, E.INTENSITY_SWAPS, True), "She has been working hard for years."),  # adverb
        (
            lambda s: E.swap_word(s, E.INTENSITY_SWAPS, True),
            "This is very important for the test.",
        ),  # no "very vital"
        (E.add_intensifier, "The air was alive with stories."),
    ],
)
def test_declines_where_unsafe(edit, sentence):
    assert edit(sentence) is None


@pytest.mark.parametrize(
    ("edit", "sentence", "dimension", "sign"),
    [
        (E.to_passive, "The interpreter imports the module.", "active_voice_ratio", -1),
        (E.to_question, "The result is an integer.", "curiosity_index", +1),
        (
            lambda s: E.add_simile(s, "a recipe"),
            "The function runs each statement in order.",
            "metaphor_density",
            +1,
        ),
        (lambda s: E.add_opener(s, "Generally,"), "The call returns a new list.", "assertiveness_index", -1),
        (lambda s: E.add_opener(s, "In fact,"), "The call returns a new list.", "assertiveness_index", +1),
        (lambda s: E.add_opener(s, "Eventually,"), "The call returns a new list.", "storytelling_index", +1),
        (
            lambda s: E.add_opener(s, "Unfortunately,"),
            "The call returns a new list.",
            "emotional_valence",
            -1,
        ),
        (E.add_intensifier, "This step is important for the test.", "emotional_intensity", +1),
    ],
)
def test_edit_moves_its_dimension(edit, sentence, dimension, sign):
    edited = edit(sentence)
    assert edited and edited != sentence
    assert sign * (measure(edited, dimension) - measure(sentence, dimension)) > 0.01, edited


def test_a_time_marker_needs_a_past_tense_not_a_participle_adjective():
    assert E.tells_past_event("The team shared the document.")
    assert E.tells_past_event("We waited for the train.")
    assert not E.tells_past_event("We write down every decision in a shared document.")  # an adjective
    assert not E.tells_past_event("All argument expressions are evaluated.")  # a present rule


def test_a_stance_opener_is_not_put_on_a_sentence_of_the_other_stance():
    """The refiner adds a hedge only where nothing insists and a booster only where nothing hedges."""
    from resonance_os.generation.refiner_layer import RefinerLayer

    refiner = RefinerLayer()
    assert E.has_stance("It becomes evident that libraries will grow.", booster=True)
    assert E.has_stance("Libraries may grow.", booster=False)
    assert not E.has_stance("Libraries grow.", booster=True)
    assert not E.has_stance("Libraries grow.", booster=False)
    insisting = ["It becomes evident that the libraries will grow.", "The town is certainly larger now."]
    hedging = ["The libraries may grow next year.", "The town is probably larger now."]
    gaps = [0.0] * 8
    gaps[3] = -0.3  # less assertive: add a hedge
    assert refiner.refine(" ".join(insisting), gaps, seed=0) == " ".join(insisting)
    gaps[3] = +0.3  # more assertive: add a booster
    assert refiner.refine(" ".join(hedging), gaps, seed=0) == " ".join(hedging)
    plain = "The libraries grow every year. The town is larger now."
    assert refiner.refine(plain, gaps, seed=0) != plain
