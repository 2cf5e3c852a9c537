"""Built-in verifiable rewards for GRPO, referenced by name (``resonance llm train``'s ``[reward]`` table).

Each builder returns a plain reward callable ``(prompts, completions) -> list[float]`` named after the
reward (so the trainer logs ``reward_<name>``), scoring 1.0 for a pass and 0.0 otherwise:

- ``exact_match``: the completion, stripped, equals the prompt's answer (``answers`` maps prompt ->
  answer; option ``ignore_case``, default false).
- ``contains``: the completion contains ``text`` (option), or the prompt's answer when no ``text`` is given.
- ``digits_sorted``: the digits of the completion are the prompt's digits in ascending order (option
  ``descending``). Digits are the characters 0-9 and the words zero..nine, so word-level toy
  tokenizers work too.

Usage::

    from resonance_os.llm.rewards import build_reward

    fn = build_reward("contains", text="cat")
    fn(["a prompt"], ["the cat sat"])  # [1.0]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from resonance_os.rl.errors import ConfigError

RewardFn = Callable[[list[Any], list[str]], list[float]]
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_DIGIT_TOKEN = re.compile(r"[0-9]|\b(?:" + "|".join(DIGIT_WORDS) + r")\b", re.IGNORECASE)


def digits(text: str) -> list[int]:
    """The digits of ``text`` in order: characters 0-9 and the words zero..nine."""
    out = []
    for match in _DIGIT_TOKEN.finditer(text):
        token = match.group(0).lower()
        out.append(int(token) if token.isdigit() else DIGIT_WORDS.index(token))
    return out


def _prompt_key(prompt: Any) -> str:
    """Chat prompts (lists of messages) are looked up by their last message's content."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], Mapping):
        return str(prompt[-1].get("content", ""))
    return str(prompt)


def _answer_of(name: str, answers: Mapping[str, str] | None) -> Callable[[Any], str]:
    if not answers:
        raise ConfigError(
            f"reward {name!r} needs an answer per prompt: give data.answers (one per prompt) or "
            "a prompts file with 'prompt<TAB>answer' lines"
        )

    def answer(prompt: Any) -> str:
        key = _prompt_key(prompt)
        if key not in answers:
            raise ConfigError(f"reward {name!r}: no answer for prompt {key[:60]!r}")
        return answers[key]

    return answer


def exact_match(answers: Mapping[str, str] | None = None, *, ignore_case: bool = False) -> RewardFn:
    answer = _answer_of("exact_match", answers)

    def norm(text: str) -> str:
        text = " ".join(text.split())
        return text.lower() if ignore_case else text

    def exact_match(prompts: list[Any], completions: list[str]) -> list[float]:
        return [float(norm(c) == norm(answer(p))) for p, c in zip(prompts, completions, strict=True)]

    return exact_match


def contains(answers: Mapping[str, str] | None = None, *, text: str | None = None) -> RewardFn:
    if text is not None and (not isinstance(text, str) or not text):
        raise ConfigError(f"reward 'contains': text={text!r} must be a non-empty string")
    answer = (lambda _p: text) if text is not None else _answer_of("contains", answers)

    def contains(prompts: list[Any], completions: list[str]) -> list[float]:
        return [float(answer(p) in c) for p, c in zip(prompts, completions, strict=True)]

    return contains


def digits_sorted(answers: Mapping[str, str] | None = None, *, descending: bool = False) -> RewardFn:
    if not isinstance(descending, bool):
        raise ConfigError(f"reward 'digits_sorted': descending={descending!r} must be true or false")

    def digits_sorted(prompts: list[Any], completions: list[str]) -> list[float]:
        out = []
        for p, c in zip(prompts, completions, strict=True):
            want = sorted(digits(_prompt_key(p)), reverse=descending)
            out.append(float(bool(want) and digits(c) == want))
        return out

    return digits_sorted


REWARDS: dict[str, Callable[..., RewardFn]] = {
    "exact_match": exact_match,
    "contains": contains,
    "digits_sorted": digits_sorted,
}


def build_reward(name: str, answers: Mapping[str, str] | None = None, **options: Any) -> RewardFn:
    """The built-in reward ``name`` with its options; a ``ConfigError`` names an unknown reward or option."""
    if name not in REWARDS:
        raise ConfigError(f"unknown reward {name!r}; built-in rewards are {', '.join(sorted(REWARDS))}")
    try:
        return REWARDS[name](answers, **options)
    except TypeError:
        import inspect

        allowed = [p for p in inspect.signature(REWARDS[name]).parameters if p != "answers"] + ["weight"]
        raise ConfigError(
            f"reward {name!r} got unknown options {sorted(options)}; its options are {allowed}"
        ) from None
