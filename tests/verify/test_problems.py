"""Loading problems in the common JSONL shapes, and judging answers."""

from __future__ import annotations

import json

import pytest

from resonance_os.verify import AssertTest, ProblemFormatError, StdioTest, builtin_problems, load_problems
from resonance_os.verify.outcomes import outputs_match


def write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n", encoding="utf-8")
    return path


def test_our_shape_taco_and_livecodebench_shapes_load(tmp_path):
    records = [
        {
            "id": "ours",
            "description": "add",
            "tests": [{"input": "1 2\n", "output": "3\n"}],
            "solution": "print(3)",
        },
        {
            "question": "double it",
            "input_output": json.dumps({"inputs": ["2\n", "5\n"], "outputs": ["4\n", "10\n"]}),
            "solutions": json.dumps(["print(2 * int(input()))"]),
            "difficulty": "EASY",
        },
        {
            "question": "call",
            "input_output": {"inputs": [[1, 2], [3, 4]], "outputs": [[3], [7]], "fn_name": "add"},
        },
        {
            "question_id": "lcb-1",
            "question_content": "echo",
            "public_test_cases": json.dumps([{"input": "x\n", "output": "x\n", "testtype": "stdin"}]),
            "private_test_cases": [{"input": "y\n", "output": "y\n", "testtype": "stdin"}],
        },
    ]
    ours, taco, taco_call, lcb = load_problems(write_jsonl(tmp_path / "p.jsonl", records))
    assert (
        ours.problem_id == "ours"
        and ours.tests == (StdioTest("1 2\n", "3\n"),)
        and ours.solution == "print(3)"
    )
    assert taco.problem_id == "p.jsonl:2" and len(taco.tests) == 2
    assert taco.solution == "print(2 * int(input()))" and taco.metadata["difficulty"] == "EASY"
    assert taco_call.entry_point == "add"
    assert taco_call.tests == (
        AssertTest("assert add(*[1, 2]) == 3", entry_point="add"),
        AssertTest("assert add(*[3, 4]) == 7", entry_point="add"),
    )
    assert lcb.problem_id == "lcb-1" and [t.input for t in lcb.tests] == ["x\n", "y\n"]


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "a"}, "no tests found"),
        ({"id": "a", "tests": [{"input": "1"}]}, "needs 'input' and 'output'"),
        ({"id": "a", "tests": []}, "has no tests"),
        ({"input_output": "{not json"}, "'input_output' is not valid JSON"),
        ({"input_output": {"inputs": ["1"], "outputs": []}}, "equally long"),
        (
            {"public_test_cases": [{"input": "1", "output": "1", "testtype": "functional"}]},
            "only stdin tests",
        ),
    ],
)
def test_malformed_problems_name_the_line_and_the_fix(tmp_path, record, message):
    path = write_jsonl(
        tmp_path / "bad.jsonl", [{"id": "fine", "tests": [{"input": "", "output": ""}]}, record]
    )
    with pytest.raises(ProblemFormatError, match=message) as error:
        load_problems(path)
    assert "bad.jsonl:2" in str(error.value) or "has no tests" in str(error.value)


def test_a_missing_file_and_a_broken_line_are_clear_errors(tmp_path):
    with pytest.raises(ProblemFormatError, match="does not exist"):
        load_problems(tmp_path / "nope.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"id": 1,\n', encoding="utf-8")
    with pytest.raises(ProblemFormatError, match="broken.jsonl:1: not valid JSON"):
        load_problems(tmp_path / "broken.jsonl")


def test_outputs_match_like_a_judge():
    assert outputs_match("3\n", "3")
    assert outputs_match("1 2  \n3\n\n", "1 2\n3")
    assert not outputs_match("1 2\n3", "1 2 3")
    assert not outputs_match("", "0")


def test_the_shipped_problem_set_loads_with_solutions():
    problems = builtin_problems()
    assert len(problems) == 8
    assert all(problem.solution and len(problem.tests) >= 2 for problem in problems)
    assert len({problem.problem_id for problem in problems}) == len(problems)


def test_bad_limits_and_settings_name_the_field():
    from resonance_os.core.errors import ValidationError
    from resonance_os.verify import SandboxLimits

    with pytest.raises(ValidationError, match="wall_seconds must be positive"):
        SandboxLimits(wall_seconds=0)
    with pytest.raises(ValidationError, match="cpu_seconds must be a whole number >= 1"):
        SandboxLimits(cpu_seconds=0)
