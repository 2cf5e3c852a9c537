"""``resonance score FILE --profile tenant/name``: the writing reward of a text and every term behind it."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.hrv_option import HrvOpt, ProfileOpt, StoreOpt, parse_hrv_option
from resonance_os.cli.numbers import GAP_CONVENTION, dimension_table, gap_cell, meaning, terms_table
from resonance_os.cli.reward_option import REWARD_HELP
from resonance_os.cli.text_input import read_source
from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS, REWARD_TERM_MEANINGS

console = Console(highlight=False)


def score(
    source: str = typer.Argument(..., help="Text file to score (UTF-8), or - to read standard input."),
    profile: str = ProfileOpt,
    hrv: str = HrvOpt,
    prompt: str = typer.Option(
        None, "--prompt", help="What the text should be about (enables the topic term)."
    ),
    reward: str = typer.Option(
        None,
        "--reward",
        "--model",  # its name before --reward was every command's
        help=REWARD_HELP,
        show_default=False,
    ),
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print JSON with keys hrv, resonance, fluency, coherence, topic, repetition, reward, meta_text.",
    ),
    store: str = StoreOpt,
) -> None:
    """Score a text with the writing reward: style match to a profile times fluency, coherence, topic and
    (no) repetition (docs/reward.md). Without --profile or --hrv the default profile is the target."""

    def run():
        if profile is not None and hrv is not None:
            raise ValidationError("give --profile or --hrv, not both")
        text = read_source(source)  # input errors first: they need none of the imports below
        from resonance_os.profiles.targets import resolve_target
        from resonance_os.quality.reward import make_reward

        target, source_label = resolve_target(
            parse_hrv_option(hrv) if hrv is not None else None, profile, store
        )
        return make_reward(reward).score(text, target, prompt=prompt), target, source_label

    result, target, target_label = run_reporting_user_errors(run)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    values = {name: getattr(result, name) for name in REWARD_TERM_MEANINGS}
    table = terms_table(values, title=f"reward {result.reward:.3f}")
    table.caption = f"target: {target_label}; topic needs --prompt"
    console.print(table)
    gaps = dimension_table("target", "measured", "gap")
    for name, t, m in zip(HRV_DIMENSIONS, target, result.hrv):
        gaps.add_row(name, f"{t:.3f}", f"{m:.3f}", gap_cell(t, m), meaning(name))
    gaps.caption = GAP_CONVENTION
    console.print(gaps)
    if result.meta_text:
        console.print("[yellow]meta-text found:[/yellow] " + " | ".join(result.meta_text))
