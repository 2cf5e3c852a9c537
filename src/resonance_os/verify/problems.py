"""Programming problems with test cases: stdin/stdout tests and function-call (assert) tests.

A :class:`Problem` holds its tests; ``test.program_for(source)`` is the program the sandbox runs for
one test and ``test.judge(execution)`` turns the sandbox's report into an :class:`Outcome`.

``load_problems(path)`` reads the common JSONL shapes, one problem a line:

- ours: ``{"id", "description", "tests": [{"input", "output"}], "solution"?}``;
- TACO-like: ``{"question", "input_output": "{\\"inputs\\": [...], \\"outputs\\": [...], \\"fn_name\\"?}",
  "solutions"?}`` (``input_output`` may also be an object; with ``fn_name`` the tests are calls);
- LiveCodeBench-like: ``{"question_id", "question_content", "public_test_cases": "[{\\"input\\",
  \\"output\\", \\"testtype\\": \\"stdin\\"}]", "private_test_cases"?}`` (JSON text or a list).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from resonance_os.verify.errors import ProblemFormatError
from resonance_os.verify.outcomes import Outcome, outputs_match
from resonance_os.verify.sandbox import Execution


@dataclass(frozen=True)
class StdioTest:
    """Run the program with ``input`` on stdin; it passes when stdout matches ``output``."""

    input: str
    output: str

    @property
    def stdin(self) -> str:
        return self.input

    def program_for(self, source: str) -> str:
        return source

    def judge(self, execution: Execution) -> Outcome:
        if execution.outcome is not None:
            return execution.outcome
        return Outcome.PASSED if outputs_match(execution.stdout, self.output) else Outcome.WRONG_ANSWER


@dataclass(frozen=True)
class AssertTest:
    """Append ``code`` (asserts, or a HumanEval ``check``) to the program; it passes when it exits 0.

    A failing ``assert`` is a wrong answer; any other exception is a runtime error.
    """

    code: str

    stdin = ""

    def program_for(self, source: str) -> str:
        return f"{source}\n\n{self.code}\n"

    def judge(self, execution: Execution) -> Outcome:
        if execution.outcome is Outcome.RUNTIME_ERROR and "AssertionError" in execution.detail:
            return Outcome.WRONG_ANSWER
        return execution.outcome if execution.outcome is not None else Outcome.PASSED


TestCase = StdioTest | AssertTest


@dataclass(frozen=True)
class Problem:
    """A problem: ``problem_id``, the statement shown to the model, its tests and, when known, a
    reference solution. ``entry_point`` names the function of function-call problems."""

    problem_id: str
    prompt: str
    tests: tuple[TestCase, ...]
    solution: str | None = None
    entry_point: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.tests:
            raise ProblemFormatError(f"problem {self.problem_id!r} has no tests; give it at least one")


def _json_field(value: Any, where: str, name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise ProblemFormatError(f"{where}: field {name!r} is not valid JSON ({exc.msg})") from None
    return value


def _call_test(fn_name: str, args: Any, expected: Any) -> AssertTest:
    if not isinstance(args, list):
        args = [args]
    if isinstance(expected, list) and len(expected) == 1:  # TACO wraps single results in a list
        expected = expected[0]
    return AssertTest(f"assert {fn_name}(*{args!r}) == {expected!r}")


def _stdio_tests(cases: Any, where: str, name: str) -> list[TestCase]:
    if not isinstance(cases, list):
        raise ProblemFormatError(f"{where}: field {name!r} must be a list of {{input, output}} objects")
    tests: list[TestCase] = []
    for case in cases:
        if not isinstance(case, dict) or "input" not in case or "output" not in case:
            raise ProblemFormatError(f"{where}: each test in {name!r} needs 'input' and 'output'")
        if case.get("testtype", "stdin") != "stdin":
            raise ProblemFormatError(
                f"{where}: test type {case['testtype']!r} is not supported; only stdin tests are"
            )
        tests.append(StdioTest(str(case["input"]), str(case["output"])))
    return tests


def problem_from_record(record: dict[str, Any], where: str = "problem") -> Problem:
    """One problem from a JSON object in any of the shapes named in the module docstring."""
    if not isinstance(record, dict):
        raise ProblemFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    problem_id = str(record.get("id", record.get("question_id", record.get("task_id", where))))
    prompt = record.get("description") or record.get("question_content") or record.get("question") or ""
    solution = record.get("solution")
    if solution is None and record.get("solutions"):
        solutions = _json_field(record["solutions"], where, "solutions")
        solution = solutions[0] if isinstance(solutions, list) and solutions else None
    entry_point = None
    if "tests" in record:
        tests = _stdio_tests(record["tests"], where, "tests")
    elif "input_output" in record:
        io = _json_field(record["input_output"], where, "input_output")
        inputs, outputs = io.get("inputs"), io.get("outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
            raise ProblemFormatError(
                f"{where}: 'input_output' needs equally long 'inputs' and 'outputs' lists"
            )
        entry_point = io.get("fn_name")
        if entry_point:
            tests = [_call_test(entry_point, i, o) for i, o in zip(inputs, outputs, strict=True)]
        else:
            tests = _stdio_tests(
                [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)],
                where,
                "input_output",
            )
    elif "public_test_cases" in record:
        tests = _stdio_tests(
            _json_field(record["public_test_cases"], where, "public_test_cases"), where, "public_test_cases"
        )
        private = record.get("private_test_cases")
        if private:
            tests += _stdio_tests(
                _json_field(private, where, "private_test_cases"), where, "private_test_cases"
            )
    else:
        raise ProblemFormatError(
            f"{where}: no tests found; give 'tests' (list of {{input, output}}), 'input_output' (TACO) "
            "or 'public_test_cases' (LiveCodeBench)"
        )
    extra = {key: record[key] for key in ("difficulty", "source", "title", "question_title") if key in record}
    return Problem(problem_id, str(prompt), tuple(tests), solution, entry_point, extra)


def jsonl_records(path: str | Path, what: str) -> Iterator[tuple[str, Any]]:
    """``("file:line", record)`` for each non-blank line of a JSONL file; ``what`` names the file in
    the error when it does not exist ("problem file", "completions file")."""
    path = Path(path)
    if not path.is_file():
        raise ProblemFormatError(f"{what} {str(path)!r} does not exist; give a JSONL file")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            yield where, json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProblemFormatError(f"{where}: not valid JSON ({exc.msg})") from None


def load_problems(path: str | Path) -> list[Problem]:
    """Problems from a JSONL file (one JSON object a line; blank lines skipped)."""
    return [problem_from_record(record, where) for where, record in jsonl_records(path, "problem file")]


def problem_from_test_file(path: str | Path) -> Problem:
    """A problem whose tests are the ``{"input", "output"}`` lines of a JSONL file."""
    path = Path(path)
    if not path.is_file():
        raise ProblemFormatError(
            f"test file {str(path)!r} does not exist; give a JSONL file of {{input, output}} lines"
        )
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ProblemFormatError(f"{path.name}:{number}: not valid JSON ({exc.msg})") from None
    return Problem(path.stem, "", tuple(_stdio_tests(cases, path.name, "tests")))


def split_problems(
    problems: Sequence[Problem], heldout: float | int, seed: int = 0
) -> tuple[list[Problem], list[Problem]]:
    """``(train, held_out)``: a seeded shuffle of ``problems`` split in two, each part in input order.

    ``heldout`` is a fraction in (0, 1) of the problems (rounded, at least one) or a count >= 1; both
    parts must be non-empty. Same problems and seed, same split.
    """
    n = len(problems)
    if isinstance(heldout, bool) or not isinstance(heldout, (int, float)):
        raise ProblemFormatError(f"heldout={heldout!r} must be a fraction in (0, 1) or a count >= 1")
    if isinstance(heldout, int):
        count = heldout
    else:
        count = max(1, round(heldout * n)) if 0 < heldout < 1 else 0
    if not 1 <= count < n:
        raise ProblemFormatError(
            f"heldout={heldout!r} leaves no problems for one side of the split of {n} problems; give a "
            "fraction in (0, 1) or a count from 1 to the number of problems - 1"
        )
    order = random.Random(seed).sample(range(n), n)
    held = set(order[:count])
    return [p for i, p in enumerate(problems) if i not in held], [
        p for i, p in enumerate(problems) if i in held
    ]


def builtin_problems() -> list[Problem]:
    """The small stdin/stdout problem set shipped with the package (``verify/data/stdio_problems.jsonl``)."""
    with resources.as_file(resources.files("resonance_os.verify") / "data" / "stdio_problems.jsonl") as path:
        return load_problems(path)
