"""Programming problems with test cases: stdin/stdout tests and function-call (assert) tests.

A :class:`Problem` holds its tests; ``test.program_for(source)`` is the program the sandbox runs for
one test (with ``test.stdin`` and, for function-call tests, ``test.calls`` for the trusted harness),
``test.judge(execution)`` turns the sandbox's report into an :class:`Outcome` and
``test.explain(execution, outcome)`` says why in a line.

``load_problems(path)`` reads the common JSONL shapes, one problem a line:

- ours: ``{"id", "description", "tests": [{"input", "output"}], "solution"?}``;
- TACO-like: ``{"question", "input_output": "{\\"inputs\\": [...], \\"outputs\\": [...], \\"fn_name\\"?}",
  "solutions"?}`` (``input_output`` may also be an object; with ``fn_name`` the tests are calls);
- LiveCodeBench-like: ``{"question_id", "question_content", "public_test_cases": "[{\\"input\\",
  \\"output\\", \\"testtype\\": \\"stdin\\"}]", "private_test_cases"?}`` (JSON text or a list).
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import random
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from resonance_os.verify.errors import ProblemFormatError
from resonance_os.verify.outcomes import Outcome, outputs_match
from resonance_os.verify.sandbox import CallTests, Execution


@dataclass(frozen=True)
class StdioTest:
    """Run the program with ``input`` on stdin; it passes when stdout matches ``output``."""

    input: str
    output: str

    calls = None

    @property
    def stdin(self) -> str:
        return self.input

    def program_for(self, source: str) -> str:
        return source

    def judge(self, execution: Execution) -> Outcome:
        if execution.outcome is not None:
            return execution.outcome
        return Outcome.PASSED if outputs_match(execution.stdout, self.output) else Outcome.WRONG_ANSWER

    def explain(self, execution: Execution, outcome: Outcome) -> str:
        if outcome is Outcome.WRONG_ANSWER:
            return f"expected {self.output[:60]!r}, got {execution.stdout[:60]!r}"
        return execution.detail


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds anywhere (assignments, definitions, parameters, imports, handlers)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


_PARSING = threading.Lock()
"""One ``ast.parse`` at a time: CPython 3.11's AST constructor checks its recursion depth in state the
threads of a ``VerifierPool`` share, and parses running at once failed in CI with ``SystemError: AST
constructor recursion depth mismatch``."""


def _parse(source: str) -> ast.Module:
    with _PARSING:
        return ast.parse(source)


def called_names(code: str, prelude: str = "", entry_point: str | None = None) -> tuple[str, ...]:
    """The names ``code`` takes from the program: ``entry_point`` and every name it reads but neither
    it, the trusted ``prelude`` (at its top level) nor the builtins define."""
    try:
        tree = _parse(code)
    except SyntaxError:
        return (entry_point,) if entry_point else ()  # the harness reports the test's syntax error
    try:
        prelude_tree = _parse(prelude)
        defined_by_prelude = _bound_names(ast.Module(body=prelude_tree.body, type_ignores=[]))
    except SyntaxError:
        defined_by_prelude = set()
    read = {
        node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    names = read - _bound_names(tree) - defined_by_prelude - set(dir(builtins))
    return tuple(sorted(names | ({entry_point} if entry_point else set())))


FAILURE_OUTCOMES = {
    "assertion": Outcome.WRONG_ANSWER,
    "not_plain_data": Outcome.WRONG_ANSWER,
    "malformed": Outcome.WRONG_ANSWER,
    "too_large": Outcome.OUTPUT_LIMIT,
    "missing": Outcome.WRONG_ANSWER,
    "raised": Outcome.RUNTIME_ERROR,
    "error": Outcome.RUNTIME_ERROR,
    "cannot_send": Outcome.SANDBOX_ERROR,
}
"""The outcome of each way a harness verdict fails (calls.judge); ``no_answer`` depends on the program."""


@dataclass(frozen=True)
class AssertTest:
    """Function-call tests: ``code`` (asserts, or a HumanEval ``check`` and its call) run by a trusted
    harness process, after the trusted ``prelude`` (HumanEval's prompt, whose helpers its check uses),
    each name it takes from the program (:func:`called_names`) calling the program's function over a
    pipe and getting back plain data (plain_data.py). It passes only when the test code ran to its
    end in the harness with every call answered; a failing ``assert`` is a wrong answer, an answer
    that is not plain data too, an exception a runtime error, ending before answering a failure.
    A function named like a builtin (``max``) is the program's only as the ``entry_point``: otherwise
    the test's ``max`` is the builtin (a program never decides what a test's builtins are).
    """

    code: str
    prelude: str = ""
    entry_point: str | None = None

    stdin = ""

    def program_for(self, source: str) -> str:
        return source

    @functools.cached_property
    def calls(self) -> CallTests:
        return CallTests(self.code, called_names(self.code, self.prelude, self.entry_point), self.prelude)

    def judge(self, execution: Execution) -> Outcome:
        verdict = execution.harness
        if verdict is not None and verdict["passed"]:
            return Outcome.PASSED
        if execution.outcome in (
            Outcome.TIMEOUT,
            Outcome.OUTPUT_LIMIT,
            Outcome.MEMORY_LIMIT,
            Outcome.SANDBOX_ERROR,
        ):
            return execution.outcome
        if verdict is None:
            return Outcome.SANDBOX_ERROR
        if verdict["failure"] == "no_answer":  # a crash is a runtime error, a clean exit no answer
            return execution.outcome or Outcome.WRONG_ANSWER
        return FAILURE_OUTCOMES.get(verdict["failure"], Outcome.RUNTIME_ERROR)

    def explain(self, execution: Execution, outcome: Outcome) -> str:
        verdict = execution.harness
        if outcome is Outcome.PASSED:
            return ""
        if verdict is None:
            return execution.detail or "the test harness gave no verdict"
        detail = verdict["detail"]
        if verdict["failure"] == "no_answer":
            ended = execution.detail or f"it exited with code {execution.exit_code}"
            detail = f"{detail}: {ended}"
        return detail


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
    return AssertTest(
        f"assert {fn_name}(*{args!r}) == {expected!r}", entry_point=fn_name
    )  # even if a builtin's name


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
