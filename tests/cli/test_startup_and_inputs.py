"""The command line answers help and input errors without loading the heavy libraries, refuses what it
cannot do in reasonable time (texts over the service's limit, too many paragraphs) at once, takes a
mistyped file name as an error, not as text, shows progress while writing, and keeps `train --help`
readable at 80 columns."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from resonance_os.api.http.schemas import GenerateRequest
from resonance_os.cli.hr_main import app
from resonance_os.core.limits import MAX_PARAGRAPHS, MAX_TEXT_CHARS

runner = CliRunner()
HEAVY = ("torch", "transformers", "sklearn", "scipy", "sqlalchemy", "alembic", "fastapi", "vaderSentiment")
"""Libraries that take seconds to import; a command imports them only when it does real work."""

LOADED = f"""
import json, sys
sys.argv = ["resonance", *sys.argv[1:]]
from resonance_os.cli.hr_main import main
try:
    main()
except SystemExit:
    pass
print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]), file=sys.stderr)
"""


def loaded_by(*args: str) -> set[str]:
    """The heavy libraries a fresh interpreter has loaded after running ``resonance ARGS``."""
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=120, env=os.environ
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["train", "--help"],
        ["profiles", "--help"],
        ["analyze", "missing.txt"],
        ["score", "missing.txt"],
    ],
)
def test_help_and_input_errors_load_no_heavy_library(args):
    assert loaded_by(*args) == set()


def test_train_help_at_80_columns_shows_every_option_whole():
    done = subprocess.run(
        [sys.executable, "-m", "resonance_os.cli.hr_main", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in done.stdout
    import typer.main

    command = typer.main.get_command(app).commands["train"]
    names = [name for param in command.params for name in param.opts if name.startswith("--")]
    assert len(names) > 10
    for name in names:
        assert any(line.lstrip().startswith(name) for line in lines), name


def test_compare_refuses_a_missing_file_and_takes_literal_text_when_asked():
    typo = runner.invoke(app, ["compare", "draft.txt", "The harbour woke at dawn."])
    assert typo.exit_code == 2
    assert "no such file: 'draft.txt'" in typo.stderr and "--literal" in typo.stderr
    literal = runner.invoke(app, ["compare", "--literal", "end/beginning.", "The harbour woke.", "--json"])
    assert literal.exit_code == 0, literal.output
    assert 0 <= json.loads(literal.stdout)["similarity"] <= 1
    words = runner.invoke(app, ["compare", "The tide came in.", "The harbour woke at dawn.", "--json"])
    assert words.exit_code == 0, words.output  # ordinary sentences are still text


@pytest.mark.parametrize("command", ["score", "analyze", "refine"])
def test_a_text_over_the_service_limit_is_refused_at_once(command, tmp_path):
    big = tmp_path / "book.txt"
    big.write_text("The harbour woke at dawn. " * (MAX_TEXT_CHARS // 20), encoding="utf-8")
    result = runner.invoke(app, [command, str(big)])
    assert result.exit_code == 2
    assert f"the limit is {MAX_TEXT_CHARS:,} characters" in result.stderr and "in parts" in result.stderr
    huge = tmp_path / "dump.txt"
    huge.write_bytes(b"x" * (4 * MAX_TEXT_CHARS + 1))  # refused from its size, before it is read
    assert "bytes; the limit" in runner.invoke(app, [command, str(huge)]).stderr


def test_paragraph_limit_is_the_services():
    assert GenerateRequest.model_fields["paragraphs"].metadata[-1].le == MAX_PARAGRAPHS
    over = runner.invoke(app, ["generate", "tea", "--paragraphs", str(MAX_PARAGRAPHS + 1)])
    assert over.exit_code == 2 and f"less than or equal to {MAX_PARAGRAPHS}" in over.output


def test_generate_reports_each_paragraph_on_stderr():
    result = runner.invoke(app, ["generate", "harbour mornings", "--paragraphs", "2", "--backend", "builtin"])
    assert result.exit_code == 0, result.output
    steps = [line.split(" (")[0] for line in result.stderr.splitlines()]
    assert steps[0] == "loading the writer"
    assert steps[1].startswith("writing paragraph 1 of 2") and steps[2] == "writing paragraph 2 of 2"
    assert "writing paragraph" not in result.stdout  # the article alone on stdout
