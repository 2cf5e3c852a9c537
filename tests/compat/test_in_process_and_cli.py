"""The original README's in-process API and the CLI guide's command line, rewritten."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

VOICE = [0.3, 0.6, 0.5, 0.7, 0.4, 0.2, 0.5, 0.8]


@pytest.fixture
def store(tmp_path, monkeypatch):
    folder = tmp_path / "store"
    with HRVProfileManager(folder) as manager:
        manager.save_profile("company_a", "brand_voice", VOICE)
    monkeypatch.setenv("RESONANCE_STORE", str(folder))
    return folder


def test_in_process_hr_generate_returns_article_and_hrv_feedback(store):
    from resonance_os.api.hr_server import SimpleRequest, hr_generate
    from resonance_os.profiling.hrv_extractor import HRVExtractor

    response = hr_generate(SimpleRequest(prompt="Benefits of machine learning"))
    assert "machine learning" in response.article.lower()
    assert response.hrv_feedback == HRVExtractor().extract(response.article)
    assert list(response.hrv) == HRV_DIMENSIONS
    assert response.target_source == "default profile builtin/professional"

    toward = hr_generate(
        SimpleRequest(prompt="AI in healthcare", tenant="company_a", profile_name="brand_voice")
    )
    assert toward.target_source == "profile company_a/brand_voice"
    assert toward.article.target_hrv == VOICE
    with pytest.raises(FileNotFoundError, match="no profile 'medical' for tenant 'healthcare'"):
        hr_generate(SimpleRequest(prompt="AI in healthcare", tenant="healthcare", profile_name="medical"))


def test_in_process_hr_generate_takes_the_writing_reward_as_everywhere(store):
    from resonance_os.api.hr_server import SimpleRequest, hr_generate
    from resonance_os.core.errors import ValidationError
    from resonance_os.quality.reward import make_reward

    fast = hr_generate(SimpleRequest(prompt="Benefits of machine learning", reward="fast")).article
    assert fast.score == make_reward("fast").score(str(fast), fast.target_hrv, prompt=fast.prompt)
    with pytest.raises(ValidationError, match="reward must be one of fast, lm .*got 'gpt'"):
        hr_generate(SimpleRequest(prompt="Benefits of machine learning", reward="gpt"))


def run_hr_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``python -m resonance_os.cli.hr_main ARGS`` in this process: exit code, stdout, stderr."""
    from resonance_os.cli import hr_main

    monkeypatch.setattr(sys, "argv", ["hr_main", *args])
    with pytest.raises(SystemExit) as exited:
        hr_main.main()
    out = capsys.readouterr()
    return exited.value.code, out.out, out.err


def check_sections(stdout: str) -> None:
    lines = stdout.rstrip("\n").split("\n")
    assert lines[0] == "=== Generated Human-Resonant Article ==="
    assert lines[-2] == "=== HRV Feedback ==="
    feedback = ast.literal_eval(lines[-1])
    assert len(feedback) == 8 and all(0.0 <= v <= 1.0 for v in feedback)
    assert "machine learning" in "\n".join(lines[1:-2]).lower()


def test_old_command_line_prints_the_original_sections(store, monkeypatch, capsys):
    code, out, err = run_hr_main(
        monkeypatch,
        capsys,
        "--prompt",
        "Machine learning",
        "--tenant",
        "company_a",
        "--profile",
        "brand_voice",
    )
    assert code == 0, err
    check_sections(out)

    code, out, err = run_hr_main(
        monkeypatch, capsys, "--prompt", "x", "--tenant", "company_a", "--profile", "nope"
    )
    assert code == 2 and out == ""
    assert "no profile 'nope' for tenant 'company_a'; existing profiles: brand_voice" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_old_command_line_as_a_module(store):
    env = {**os.environ, "RESONANCE_STORE": str(store)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "resonance_os.cli.hr_main",
            "--prompt",
            "Machine learning",
            "--profile",
            "technical",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    check_sections(result.stdout)


def test_resonance_subcommands_are_unchanged(store):
    from typer.testing import CliRunner

    from resonance_os.cli.hr_main import app
    from resonance_os.cli.original_flags import is_original_form

    assert is_original_form(["--prompt", "x"]) and is_original_form(["--profile=p", "--prompt", "x"])
    assert not is_original_form(["generate", "--prompt", "x"]) and not is_original_form(["--help"])
    listed = CliRunner().invoke(app, ["profiles", "list", "company_a", "--store", str(store)])
    assert listed.exit_code == 0 and "brand_voice" in listed.stdout
