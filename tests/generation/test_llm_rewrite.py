"""Sentence rewrites by a language model: which replies count as rewrites, which sentence is
rewritten, and that a rewrite is kept only when it lowers the gap, keeps quality and passes the judge."""

from __future__ import annotations

from resonance_os.generation.llm_rewrite import (
    rewrite_advice,
    rewrite_messages,
    rewrite_sentences,
    usable_rewrite,
)
from resonance_os.quality.reward import WritingReward

PROMPT = "community gardens in small towns"
PARAGRAPH = (
    "Community gardens turn empty lots into shared kitchens. Neighbours who never spoke now trade "
    "seedlings over the fence. The town council lends the land, and volunteers bring the tools."
)
COUNCIL = "The town council lends the land, and volunteers bring the tools."
AS_QUESTION = "Does the town council lend the land while volunteers bring the tools?"


class ByLine:
    """A chat backend with scripted rewrites for each sentence it is asked to rewrite."""

    name = "scripted"

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    def sample(self, messages, n=1, seed=None, max_tokens=None):
        sentence = messages[-1]["content"].split("\n\n")[-1]
        self.asked.append(sentence)
        return self.table.get(sentence, [])[:n]


def mean_gap(target, hrv) -> float:
    return sum(abs(t - m) for t, m in zip(target, hrv)) / len(target)


def question_target(reward: WritingReward) -> list[float]:
    """The paragraph's own HRV with curiosity raised to 0.4: only a question closes the gap."""
    target = list(reward.score(PARAGRAPH, [0.5] * 8, prompt=PROMPT).hrv)
    target[4] = 0.4
    return target


def fluent(sentences: list[str]) -> list[float | None]:
    return [-2.0] * len(sentences)


def test_a_reply_counts_as_a_rewrite_only_when_it_rewrites_the_sentence() -> None:
    assert usable_rewrite(COUNCIL, AS_QUESTION) == AS_QUESTION
    assert usable_rewrite(COUNCIL, f'"{AS_QUESTION}"') == AS_QUESTION
    refused = [
        "This rewritten sentence asks whether the council lends the land.",  # talks about the task
        "Does the council lend the land (present tense)?",
        "Here is the revised version: the council lends the land.",
        "Why do birds sing at dawn?",  # no content word of the original
        "Volunteers in other cities paint murals and sing in choirs?",  # 1 of 7 content words kept
        "The council lends the land. Volunteers bring tools. Children plant seeds. Everyone eats.",
        "The council " + "and the council " * 20 + "lends the land.",
        "The Oakwood town council (OTC) lends the land to volunteers.",  # a name and an acronym
        "Since 1998 the town council lends the land to volunteers.",  # a date
        'The council lends the "land" to volunteers.',  # quotation marks the original lacks
        "Instead of saying the council lends land, you could say it shares the land.",  # advice
        "",
    ]
    assert [usable_rewrite(COUNCIL, reply) for reply in refused] == [""] * len(refused)
    # a word of the request is fine when the original already had it
    original = "Each sentence of the contract names a tenant."
    assert usable_rewrite(original, "Does each sentence of the contract name a tenant?")
    # names and figures the original has may stay, and a capital opening a sentence is no name
    named = "In 1998 the Oakwood council lent the land to volunteers."
    assert usable_rewrite(named, "Volunteers were lent the land by the Oakwood council in 1998.")


def test_a_rewrite_that_changes_what_the_sentence_is_about_is_refused() -> None:
    context = f"{PROMPT} {PARAGRAPH}"
    drifted = [
        "The company lends the land, and volunteers bring the tools.",  # no company in the paragraph
        "This product lends the land while volunteers bring the tools.",
        "The company's workers lend the land, and volunteers bring the tools.",
        "The companies' workers lend the land, and volunteers bring the tools.",  # plural possessive
        "She lends the land, and volunteers bring the tools.",  # a person nobody mentioned
        "The council lends the land. The company brings the tools for volunteers.",  # second sentence
    ]
    assert [usable_rewrite(COUNCIL, reply, context) for reply in drifted] == [""] * len(drifted)
    # subjects the paragraph or the prompt already names stay usable, and so does a story frame
    kept = [
        "The neighbours' council lends the land, and volunteers bring the tools.",
        "The gardens get their land from the council, and volunteers bring the tools.",
        "I remember how the town council lent the land and volunteers brought the tools.",
    ]
    assert [usable_rewrite(COUNCIL, reply, context) for reply in kept] == kept
    # without the paragraph, a noun the original lacks is new
    assert usable_rewrite(COUNCIL, kept[1]) == ""


def test_advice_is_plain_words_for_the_largest_gaps_and_never_about_sentence_length() -> None:
    measured = [0.9, 0.5, 0.5, 0.5, 0.0, 0.5, 0.5, 0.5]
    target = [0.1, 0.5, 0.5, 0.5, 0.6, 0.5, 0.5, 0.2]
    advice = rewrite_advice(target, measured)
    assert advice == ["ask a question", "use the passive voice once or twice"]
    content = rewrite_messages(COUNCIL, advice)[-1]["content"]
    assert content.endswith(COUNCIL) and "Ask a question." in content
    assert "curiosity" not in content.lower()


def test_the_sentence_furthest_from_the_target_is_rewritten_and_kept_when_the_gap_falls() -> None:
    reward = WritingReward()
    target = question_target(reward)
    before = reward.score(PARAGRAPH, target, prompt=PROMPT)
    backend = ByLine(
        {COUNCIL: ["This rewritten sentence asks: does the council lend the land?", AS_QUESTION]}
    )
    text, log = rewrite_sentences(backend, reward, fluent, PARAGRAPH, target, PROMPT, rounds=2, seed=1)
    after = reward.score(text, target, prompt=PROMPT)
    assert text == PARAGRAPH.replace(COUNCIL, AS_QUESTION)
    assert backend.asked[0] == COUNCIL and len(backend.asked) <= 2
    assert log.kept == [(COUNCIL, AS_QUESTION)] and log.calls[0] == {"sentence": 2, "usable": 1, "kept": True}
    assert mean_gap(target, after.hrv) < mean_gap(target, before.hrv) - 0.01
    assert after.quality >= before.quality - 0.02


def test_a_rewrite_the_judge_rates_far_less_fluent_is_refused() -> None:
    reward = WritingReward()
    target = question_target(reward)

    def judge(sentences: list[str]) -> list[float | None]:
        return [-2.0 if s == COUNCIL else -3.0 for s in sentences]  # 1 nat/token worse: refused

    text, log = rewrite_sentences(ByLine({COUNCIL: [AS_QUESTION]}), reward, judge, PARAGRAPH, target, PROMPT)
    assert text == PARAGRAPH and log.kept == [] and log.calls[0]["usable"] == 0


def test_a_rewrite_that_does_not_lower_the_gap_is_refused_and_on_target_text_is_left_alone() -> None:
    reward = WritingReward()
    own = reward.score(PARAGRAPH, [0.5] * 8, prompt=PROMPT).hrv  # near target: questions overshoot
    questions = {
        COUNCIL: [AS_QUESTION],
        "Community gardens turn empty lots into shared kitchens.": [
            "Do community gardens turn empty lots into shared kitchens?"
        ],
        "Neighbours who never spoke now trade seedlings over the fence.": [
            "Why do neighbours who never spoke now trade seedlings over the fence?"
        ],
    }
    backend = ByLine(questions)
    near = [v + 0.01 for v in own[:4]] + own[4:]
    text, log = rewrite_sentences(backend, reward, fluent, PARAGRAPH, near, PROMPT, rounds=3)
    assert len(backend.asked) == 3 and [c["usable"] for c in log.calls] == [1, 1, 1]
    assert text == PARAGRAPH and log.kept == []
    backend = ByLine({COUNCIL: [AS_QUESTION]})
    text, log = rewrite_sentences(
        backend, reward, fluent, PARAGRAPH, question_target(reward), PROMPT, tolerance=1.0
    )
    assert text == PARAGRAPH and backend.asked == [] and log.calls == []
