"""The task the Tinker examples share: sort three number words ("seven two five" -> "two five seven").

A verifiable reward (:func:`resonance_os.llm.rewards.digits_sorted`: 1 for the right words in
ascending order, else 0), prompts split once into training and held-out sets, and the chat rendering
both examples use (the prompt through the tokenizer's chat template, the answer after it, then EOS).
"""

from __future__ import annotations

import itertools
import random

from resonance_os.llm.rewards import digits_sorted

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
INSTRUCTION = "Sort these numbers from smallest to largest. Answer with the three words only:"


def problems(seed: int = 0) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, held_out): 900 and 100 (question, answer) pairs.

    Held out by answer: the 220 multisets of three digits are split once, and no held-out question
    sorts to an answer any training question has, so the held-out pass rate measures sorting learnt,
    not answers remembered.
    """
    rng = random.Random(seed)
    answers = list(itertools.combinations_with_replacement(range(10), 3))
    rng.shuffle(answers)
    held_out_answers, train_answers = answers[:44], answers[44:]

    def draw(pool: list[tuple[int, ...]], n: int) -> list[tuple[str, str]]:
        pairs = []
        for _ in range(n):
            picks = list(rng.choice(pool))
            rng.shuffle(picks)
            question = f"{INSTRUCTION} {' '.join(WORDS[i] for i in picks)}"
            pairs.append((question, " ".join(WORDS[i] for i in sorted(picks))))
        return pairs

    return draw(train_answers, 900), draw(held_out_answers, 100)


def prompt_tokens(tokenizer, question: str) -> list[int]:
    messages = [{"role": "user", "content": question}]
    return list(
        tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    )


def answer_tokens(tokenizer, answer: str) -> list[int]:
    return tokenizer.encode(answer, add_special_tokens=False) + [tokenizer.eos_token_id]


REWARD = digits_sorted()


def reward(question: str, completion: str) -> float:
    return REWARD([question.split(":")[-1]], [completion])[0]
