"""``resonance analyze FILE|-`` and ``resonance compare TEXT_A TEXT_B``: measure and compare HRVs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.text_input import read_source, text_or_file
from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

if TYPE_CHECKING:
    from resonance_os.profiling.hrv_extractor import HRVAnalysis, HRVExtractor

console = Console(highlight=False)
BAR_WIDTH = 20
EVIDENCE_ITEMS = 8
"""How many words or sentences of each evidence list the table shows (``--json`` shows all)."""


def _measure(extractor: HRVExtractor, text: str, label: str) -> HRVAnalysis:
    try:
        return extractor.analyze(text)
    except ValidationError as exc:
        raise ValidationError(f"{label}: {exc}") from None


def _bar(value: float) -> str:
    filled = round(value * BAR_WIDTH)
    return "[cyan]" + "\u2588" * filled + "[/cyan][dim]" + "\u00b7" * (BAR_WIDTH - filled) + "[/dim]"


def _summary(evidence: dict[str, object]) -> list[str]:
    """One line per evidence item: lists shortened, numbers rounded."""
    parts = []
    for key, value in evidence.items():
        if isinstance(value, list):
            if not value:
                continue
            shown = [v["phrase"] if isinstance(v, dict) else v for v in value[:EVIDENCE_ITEMS]]
            more = f" +{len(value) - EVIDENCE_ITEMS}" if len(value) > EVIDENCE_ITEMS else ""
            parts.append(f"{key}: {' | '.join(str(v) for v in shown)}{more}")
        elif isinstance(value, float):
            parts.append(f"{key}: {value:.3g}")
        else:
            parts.append(f"{key}: {value}")
    return parts


def analyze(
    source: str = typer.Argument(..., help="Text file to analyse (UTF-8), or - to read standard input."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON: the HRV by dimension, word and sentence counts."
    ),
    evidence: bool = typer.Option(
        False,
        "--evidence",
        help="Also show what was counted for each dimension (with --json: the full evidence).",
    ),
) -> None:
    """Measure the Human Resonance Vector of a text: 8 dimensions in [0, 1] (definitions: docs/hrv.md)."""

    def run() -> HRVAnalysis:
        label = "standard input" if source == "-" else repr(source)
        text = read_source(source)
        from resonance_os.profiling.hrv_extractor import HRVExtractor

        return _measure(HRVExtractor(), text, label)

    result = run_reporting_user_errors(run)
    if as_json:
        payload = result.to_dict()
        if not evidence:
            del payload["evidence"]
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    table = Table("dimension", "value", "", title=f"HRV of {'standard input' if source == '-' else source}")
    for name, value in zip(HRV_DIMENSIONS, result.hrv):
        table.add_row(name, f"{value:.3f}", _bar(value))
    table.caption = f"{result.n_words} words, {result.n_sentences} sentences"
    console.print(table)
    if evidence:
        for name in HRV_DIMENSIONS:
            console.print(f"\n[bold]{name}[/bold] {result.as_dict()[name]:.3f}")
            for line in _summary(result.evidence[name]):
                console.print(f"  {line}", markup=False)


def compare(
    text_a: str = typer.Argument(..., help="First text: a file (- for standard input), or the text itself."),
    text_b: str = typer.Argument(..., help="Second text: a file, or the text itself."),
    method: str = typer.Option(
        None,
        "--method",
        help="Similarity method: cosine, euclidean, manhattan, pearson or spearman (default: the calculator's).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: both HRVs and their similarity."),
    literal: bool = typer.Option(
        False, "--literal", help="Take both arguments as the texts themselves, never as file names."
    ),
) -> None:
    """Measure two texts and show their HRVs side by side with their similarity in [0, 1].

    Each argument is read as a file when a file of that name exists (- reads standard input),
    otherwise it is taken as the text itself: resonance compare draft.txt "A short sentence to compare."
    A missing file whose name looks like one (draft.txt, notes/a) is an error; --literal takes both
    arguments as text.
    """

    def run() -> tuple[list[float], list[float], float, str, str, str]:
        from resonance_os.profiling.hrv_extractor import HRVExtractor
        from resonance_os.similarity.metrics import SimilarityCalculator

        (a, label_a), (b, label_b) = text_or_file(text_a, literal), text_or_file(text_b, literal)
        extractor = HRVExtractor()
        hrv_a = _measure(extractor, a, label_a).hrv
        hrv_b = _measure(extractor, b, label_b).hrv
        calculator = SimilarityCalculator()
        similarity = calculator.calculate_similarity(hrv_a, hrv_b, method=method, weights=None)
        return hrv_a, hrv_b, similarity, label_a, label_b, method or calculator.default_method.value

    hrv_a, hrv_b, similarity, label_a, label_b, method_name = run_reporting_user_errors(run)
    if as_json:
        payload = {
            "a": dict(zip(HRV_DIMENSIONS, hrv_a)),
            "b": dict(zip(HRV_DIMENSIONS, hrv_b)),
            "similarity": similarity,
            "method": method_name,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    from resonance_os.cli.numbers import dimension_table, gap_cell, meaning

    table = dimension_table("A", "B", "gap A - B", title=f"A = {label_a}   B = {label_b}")
    for name, x, y in zip(HRV_DIMENSIONS, hrv_a, hrv_b):
        table.add_row(name, f"{x:.3f}", f"{y:.3f}", gap_cell(x, y), meaning(name))
    table.caption = (
        f"similarity {similarity:.3f} ({method_name}); gap = A - B, A as the target: + means B has less "
        "of that dimension than A, - more"
    )
    console.print(table)
