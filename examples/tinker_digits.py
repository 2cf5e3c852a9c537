"""The task the Tinker examples share: sort three number words ("seven two five" -> "two five seven").

A verifiable reward (:func:`resonance_os.llm.rewards.digits_sorted`: 1 for the right words in
ascending order, else 0), prompts split once into training and held-out sets, and the chat rendering
both examples use (the prompt through the tokenizer's chat template, the answer after it, then EOS).
"""

from __future__ import annotations

import random

from resonance_os.llm.rewards import digits_sorted

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
INSTRUCTION = "Sort these numbers from smallest to largest. Answer with the three words only:"


def problems(seed: int = 0) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(train, held_out): 900 and 100 (question, answer) pairs."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(1000):
        picks = [rng.randrange(10) for _ in range(3)]
        question = f"{INSTRUCTION} {' '.join(WORDS[i] for i in picks)}"
        pairs.append((question, " ".join(WORDS[i] for i in sorted(picks))))
    return pairs[:900], pairs[900:]


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
