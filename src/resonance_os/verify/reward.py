"""The sandbox as a reward callable for the GRPO trainer: ``CodeReward(pool, problems)``.

``reward(prompts, completions) -> list[float]`` is the shape ``resonance_os.llm.grpo.GRPO`` takes
(``verify`` does not import ``llm``; the shape is all they share). Every completion of the batch is
submitted to the :class:`VerifierPool` at once, so the batch is verified concurrently; the reward of
each is its verdict's (+1/-1, or the fraction passed). The prompt picks the problem: the prompt text
itself, or the last message's content for chat prompts.

How a completion becomes a program (``program_from``):

- ``"fenced"``: the last fenced code block (```` ```python ... ``` ````), else the whole completion;
- ``"continuation"``: the problem's prompt followed by the completion (HumanEval's convention: the
  completion continues the function whose signature and docstring end the prompt);
- ``"prompt_then_fenced"``: the problem's prompt, then the last fenced code block (or the whole
  completion): for chat models asked to complete a HumanEval function, which write the whole function
  again but often drop the prompt's imports and helpers; their definition replaces the stub's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from resonance_os.core.errors import ValidationError
from resonance_os.verify.errors import VerifyError
from resonance_os.verify.pool import VerifierPool
from resonance_os.verify.problems import Problem
from resonance_os.verify.rollout import Verdict

ProgramFrom = Literal["fenced", "continuation", "prompt_then_fenced"]
PROGRAM_FROM: tuple[str, ...] = get_args(ProgramFrom)
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def extract_program(completion: str) -> str:
    """The last fenced code block of ``completion``, or the whole completion when it has none. A block
    the text ends inside counts (to the end): sampling that stops at the closing fence (stop string
    ```` ```\n ````), or runs out of tokens, leaves it open."""
    blocks = _FENCE.findall(completion)
    return blocks[-1] if blocks else completion


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], Mapping):
        return str(prompt[-1].get("content", ""))
    return str(prompt)


class CodeReward:
    """Reward completions by running them against their problem's tests in the sandbox.

    Args:
        pool: the verifier pool (its ``reward`` setting decides +1/-1 or the fraction passed).
        problems: the problems, looked up by their ``prompt`` text (or give a mapping prompt -> problem).
        program_from: ``"fenced"``, ``"continuation"`` or ``"prompt_then_fenced"`` (see the module docstring).

    ``last_verdicts`` keeps the verdicts of the latest call (outcomes, tests run, seconds) for logging.
    """

    __name__ = "code"  # the trainer logs this reward as reward_code

    def __init__(
        self,
        pool: VerifierPool,
        problems: Sequence[Problem] | Mapping[str, Problem],
        program_from: ProgramFrom = "fenced",
    ) -> None:
        if program_from not in PROGRAM_FROM:
            raise ValidationError(f"program_from must be one of {PROGRAM_FROM}, got {program_from!r}")
        self.pool = pool
        self.problems = dict(problems) if isinstance(problems, Mapping) else {p.prompt: p for p in problems}
        self.program_from = program_from
        self.last_verdicts: list[Verdict] = []

    def program(self, problem: Problem, completion: str) -> str:
        if self.program_from == "continuation":
            return problem.prompt + completion
        if self.program_from == "prompt_then_fenced":
            return f"{problem.prompt}\n{extract_program(completion)}"
        return extract_program(completion)

    def __call__(self, prompts: list[Any], completions: list[str]) -> list[float]:
        problems = []
        for prompt in prompts:
            problem = self.problems.get(_prompt_text(prompt))
            if problem is None:
                raise VerifyError(
                    f"no problem has the prompt {_prompt_text(prompt)[:60]!r}...; train on the prompts of "
                    "the problems given to CodeReward"
                )
            problems.append(problem)
        futures = [
            self.pool.submit(problem, self.program(problem, completion))
            for problem, completion in zip(problems, completions, strict=True)
        ]
        self.last_verdicts = [future.result() for future in futures]
        return [verdict.reward for verdict in self.last_verdicts]
