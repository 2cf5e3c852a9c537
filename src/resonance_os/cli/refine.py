"""``resonance refine FILE --profile tenant/name``: edit a user's text toward a profile, show the diff."""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from pathlib import Path

import typer
from rich.console import Console

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.hrv_option import HrvOpt, ProfileOpt, StoreOpt, parse_hrv_option
from resonance_os.cli.numbers import GAP_CONVENTION, dimension_table, gap_cell, meaning
from resonance_os.cli.text_input import read_source
from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

console = Console(highlight=False)


def sentence_diff(before: str, after: str) -> list[str]:
    """Unified diff (difflib) of the sentences of ``before`` and ``after``, one sentence a line."""
    from resonance_os.core.text import sentence_texts

    return list(
        difflib.unified_diff(
            sentence_texts(before), sentence_texts(after), "before", "after", lineterm="", n=0
        )
    )


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise ValidationError(f"--out {path!r}: folder {str(folder)!r} does not exist; create it first")
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".refine-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def refine(
    source: str = typer.Argument(..., help="Text file to edit (UTF-8), or - to read standard input."),
    profile: str = ProfileOpt,
    hrv: str = HrvOpt,
    out: str = typer.Option(None, "--out", help="Write the edited text to this file (atomically)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the edit order (same seed, same edits)."),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print JSON with keys text, edits, hrv_before, hrv_after, reward_before, reward_after.",
    ),
    store: str = StoreOpt,
) -> None:
    """Edit a text toward a profile with the refiner's operators (hedges, boosters, questions, similes,
    voice, sentence splits and merges, word swaps), keeping only edits that close the style gap without
    costing writing quality (docs/writer.md, "Editing your own text"). Paragraphs are separated by blank
    lines; without --profile or --hrv the default profile is the target."""

    def run():
        if profile is not None and hrv is not None:
            raise ValidationError("give --profile or --hrv, not both")
        text = read_source(source)  # input errors first: they need none of the imports below
        from resonance_os.generation.human_resonant_writer import HumanResonantWriter
        from resonance_os.generation.text_refine import refine_text
        from resonance_os.profiles.targets import resolve_target

        target, label = resolve_target(parse_hrv_option(hrv) if hrv is not None else None, profile, store)
        writer = HumanResonantWriter(backend="builtin")  # revise never drafts: load no language model
        refined = refine_text(writer, text, target, seed=seed)
        if out is not None:
            write_atomically(out, refined.text + "\n")
        return refined, target, label

    refined, target, label = run_reporting_user_errors(run)
    before, after = refined.before, refined.after
    if as_json:
        payload = {
            "text": refined.text,
            "edits": refined.edits,
            "suggestions": [suggestion.to_dict() for suggestion in refined.suggestions],
            "hrv_before": dict(zip(HRV_DIMENSIONS, before.hrv)),
            "hrv_after": dict(zip(HRV_DIMENSIONS, after.hrv)),
            "reward_before": before.reward,
            "reward_after": after.reward,
        }
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    diff = [line for p, e in zip(refined.paragraphs, refined.edited) for line in sentence_diff(p, e)]
    for line in diff or ["(no edit closed the gap without costing quality; the text is unchanged)"]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "cyan"
        console.print(f"[{style}]{line}[/{style}]" if line[:1] in "+-@" else line, markup=True)
    for suggestion in refined.suggestions:
        console.print(f"{suggestion.id + 1}. {suggestion.label} ({suggestion.reason})", markup=False)
    table = dimension_table("target", "gap before", "gap after", title=f"target: {label}")
    for name, t, b, a in zip(HRV_DIMENSIONS, target, before.hrv, after.hrv):
        table.add_row(name, f"{t:.3f}", gap_cell(t, b), gap_cell(t, a), meaning(name))
    table.caption = (
        f"{GAP_CONVENTION}\nreward {before.reward:.3f} -> {after.reward:.3f} (the style match times the writing"
        f" quality; quality {before.quality:.3f} -> {after.quality:.3f}; {len(refined.edits)} edits)"
    )
    console.print(table)
