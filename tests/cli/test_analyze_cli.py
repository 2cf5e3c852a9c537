"""``resonance analyze`` and ``resonance compare`` from the command line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.profiling import sample_article
from resonance_os.profiling.hrv_extractor import HRVExtractor

runner = CliRunner()
SAMPLE_TEXT = sample_article()


@pytest.fixture()
def article(tmp_path):
    path = tmp_path / "article.txt"
    path.write_text(SAMPLE_TEXT, encoding="utf-8")
    return path


def test_analyze_prints_table_with_bars(article) -> None:
    result = runner.invoke(app, ["analyze", str(article)])
    assert result.exit_code == 0, result.output
    for name in HRV_DIMENSIONS:
        assert name in result.stdout
    assert "\u2588" in result.stdout
    assert "212 words, 19 sentences" in result.stdout


def test_analyze_json_matches_the_extractor(article) -> None:
    result = runner.invoke(app, ["analyze", str(article), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert list(payload["hrv"]) == HRV_DIMENSIONS
    expected = HRVExtractor().extract(article.read_text("utf-8"))
    assert list(payload["hrv"].values()) == pytest.approx(expected)
    assert "evidence" not in payload


def test_analyze_json_with_evidence(article) -> None:
    payload = json.loads(runner.invoke(app, ["analyze", str(article), "--json", "--evidence"]).stdout)
    phrases = [p["phrase"] for p in payload["evidence"]["active_voice_ratio"]["passives"]]
    assert "was repaired" in phrases


def test_analyze_evidence_table_lists_what_counted(article) -> None:
    result = runner.invoke(app, ["analyze", str(article), "--evidence"])
    assert result.exit_code == 0, result.output
    assert "was repaired" in result.stdout
    assert "What happened in those missing hours?" in result.stdout


def test_analyze_reads_standard_input() -> None:
    result = runner.invoke(app, ["analyze", "-", "--json"], input="Why would anyone do that? Nobody knows.")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_sentences"] == 2


def test_analyze_missing_file_is_one_line_exit_2(tmp_path) -> None:
    result = runner.invoke(app, ["analyze", str(tmp_path / "nope.txt")])
    assert result.exit_code == 2
    assert "no such file" in result.output and "nope.txt" in result.output
    assert "Traceback" not in result.output


def test_analyze_undecodable_input_exit_2(tmp_path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\u00e9 cr\u00e8me".encode("latin-1"))
    result = runner.invoke(app, ["analyze", str(bad)])
    assert result.exit_code == 2
    assert "not UTF-8" in result.output


def test_analyze_empty_input_exit_2(tmp_path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("   \n")
    result = runner.invoke(app, ["analyze", str(empty)])
    assert result.exit_code == 2
    assert "empty" in result.output


def test_compare_file_and_literal_text(article) -> None:
    result = runner.invoke(
        app, ["compare", str(article), "The file was deleted. It was removed by the admin."]
    )
    assert result.exit_code == 0, result.output
    assert "similarity" in result.stdout and "article.txt" in result.stdout


def test_compare_json_similarity_in_unit_interval(article) -> None:
    same = json.loads(runner.invoke(app, ["compare", str(article), str(article), "--json"]).stdout)
    assert same["similarity"] == pytest.approx(1.0)
    other = runner.invoke(
        app, ["compare", str(article), "Buy now! Best price ever!!!", "--json", "--method", "euclidean"]
    )
    payload = json.loads(other.stdout)
    assert 0.0 <= payload["similarity"] < 1.0 and payload["method"] == "euclidean"
    assert list(payload["a"]) == HRV_DIMENSIONS


def test_compare_bad_method_exit_2() -> None:
    result = runner.invoke(app, ["compare", "One text.", "Another text.", "--method", "bogus"])
    assert result.exit_code == 2
    assert "bogus" in result.output


def test_help_mentions_file_or_literal_text() -> None:
    result = runner.invoke(app, ["compare", "--help"])
    assert result.exit_code == 0
    assert "file" in result.stdout and "literal" in result.stdout
    assert runner.invoke(app, ["analyze", "--help"]).exit_code == 0


def test_compare_reads_standard_input(article) -> None:
    result = runner.invoke(app, ["compare", "-", str(article), "--json"], input=article.read_text("utf-8"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["similarity"] == pytest.approx(1.0)
