"""CodeReward: the sandbox as a GRPO reward callable, on real programs."""

from __future__ import annotations

import pytest

from resonance_os.verify import Problem, StdioTest, VerifierPool, VerifyError
from resonance_os.verify.reward import CodeReward, extract_program

ADD = Problem("add", "Print a + b.", (StdioTest("1 2\n", "3\n"), StdioTest("4 4\n", "8\n")))


def test_extract_program_takes_the_last_fenced_block():
    text = "First try:\n```python\nprint(1)\n```\nBetter:\n```py\nprint(2)\n```\n"
    assert extract_program(text) == "print(2)\n"
    assert extract_program("print(3)") == "print(3)"


def test_rewards_follow_the_verdicts_and_chat_prompts_find_their_problem(sandbox):
    with VerifierPool(sandbox, workers=4) as pool:
        reward = CodeReward(pool, [ADD])
        completions = [
            "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
            "print(3)",
            "```python\nraise SystemExit(1)\n```",
        ]
        chat = [{"role": "user", "content": "Print a + b."}]
        rewards = reward(["Print a + b.", chat, "Print a + b."], completions)
    assert rewards == [1.0, -1.0, -1.0]
    assert [v.outcome.value for v in reward.last_verdicts] == ["passed", "wrong_answer", "runtime_error"]
    assert reward.__name__ == "code"


def test_continuation_programs_and_unknown_prompts(sandbox):
    from resonance_os.verify import AssertTest

    square = Problem(
        "square", "def square(x):\n", (AssertTest("assert square(3) == 9"),), entry_point="square"
    )
    with VerifierPool(sandbox, workers=2) as pool:
        reward = CodeReward(pool, [square], program_from="continuation")
        assert reward(["def square(x):\n"] * 2, ["    return x * x\n", "    return x + x\n"]) == [1.0, -1.0]
        with pytest.raises(VerifyError, match="no problem has the prompt"):
            reward(["something else"], ["print(1)"])
