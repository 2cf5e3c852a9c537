"""``resonance generate "prompt"``: write an article toward a profile or HRV and show target vs measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.hrv_option import HrvOpt, ProfileOpt, StoreOpt, parse_hrv_option
from resonance_os.cli.numbers import GAP_CONVENTION, dimension_table, gap_cell, meaning
from resonance_os.cli.progress import progress
from resonance_os.cli.reward_option import REWARD_HELP
from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.core.limits import MAX_PARAGRAPHS

console = Console(highlight=False)


def article_table(article) -> Table:
    """Target vs measured HRV of an article, with the gap coloured by size and each dimension's meaning,
    under its writing reward."""
    table = dimension_table("target", "measured", "gap", title=f"writing reward {article.score.reward:.3f}")
    for name, target, measured in zip(HRV_DIMENSIONS, article.target_hrv, article.measured_hrv["article"]):
        table.add_row(name, f"{target:.3f}", f"{measured:.3f}", gap_cell(target, measured), meaning(name))
    score = article.score
    topic = "-" if score.topic is None else f"{score.topic:.3f}"
    table.caption = (
        f"{GAP_CONVENTION}\n"
        f"mean |gap| {article.mean_absolute_error:.3f} - target: {article.target_source} - backend: {article.backend}\n"
        f"reward {score.reward:.3f} = style match {score.resonance:.3f} times writing quality (fluency"
        f" {score.fluency:.3f}, coherence {score.coherence:.3f}, topic {topic}, repetition {score.repetition:.3f}):"
        " high only when the text both sounds like the voice and reads well"
    )
    return table


def generate(
    prompt: str = typer.Argument(..., help="What to write about (at most 4,000 characters)."),
    profile: str = ProfileOpt,
    hrv: str = HrvOpt,
    paragraphs: int = typer.Option(
        3,
        "--paragraphs",
        min=1,
        max=MAX_PARAGRAPHS,
        help=f"Number of paragraphs (1-{MAX_PARAGRAPHS}, the service's limit too).",
    ),
    backend: str = typer.Option(
        None,
        "--backend",
        help="local (SmolLM2; the default when installed), openai (OpenAI-compatible server) or builtin "
        "(template draft mode, no model; the default otherwise).",
    ),
    seed: int = typer.Option(None, "--seed", help="Random seed: same seed, same article (builtin, local)."),
    as_json: bool = typer.Option(False, "--json", help="Print the article, HRVs and trace as JSON."),
    policy: Path = typer.Option(
        None,
        "--policy",
        help="A training run folder (resonance train --out): a PPO run revises each drafted paragraph; a "
        "GRPO run (--method grpo) drafts with its fine-tuned language model (base model + LoRA adapter).",
    ),
    store: str = StoreOpt,
    no_adapter: bool = typer.Option(
        False,
        "--no-adapter",
        help="Draft with the bare local model even when the profile has a voice adapter (a LoRA "
        "adapter trained toward it; the built-in profiles ship one).",
    ),
    reward: str = typer.Option(
        None, "--reward", help=REWARD_HELP + " With --policy: the run's own.", show_default=False
    ),
) -> None:
    """Write an article toward a target HRV and print it with a target-vs-measured table.

    With the local model and a profile that has a voice adapter, the adapter drafts (it says so).

    Progress (loading the model, each paragraph, the time so far) goes to standard error."""

    def run():
        from resonance_os.profiles.targets import resolve_target

        if profile is not None and hrv is not None:
            raise ValidationError("give --profile or --hrv, not both")
        given = profile is not None or hrv is not None
        target, source = resolve_target(parse_hrv_option(hrv) if hrv is not None else None, profile, store)
        with progress("loading the writer") as report:
            steps = _ParagraphSteps(report, paragraphs)
            if policy is not None:  # without --profile/--hrv: the run's own target
                chosen = (target, source) if given else (None, None)
                return _write_with_run(policy, prompt, chosen, steps, seed, backend, reward)
            return _write_fresh(prompt, target, source, steps, seed, backend, no_adapter, store, reward)

    article = run_reporting_user_errors(run)
    if as_json:
        typer.echo(json.dumps(article.to_dict(), indent=2, ensure_ascii=False))
        return
    print_article(article)


class _ParagraphSteps:
    """Reports each paragraph written ("writing paragraph N of M") on the command's progress line."""

    def __init__(self, report: Any, paragraphs: int) -> None:
        self.report = report
        self.paragraphs = paragraphs
        self.written = 1

    def first(self, drafter: str) -> None:
        self.report.step(f"writing paragraph 1 of {self.paragraphs} with {drafter}")

    def next_paragraph(self) -> None:
        self.written += 1
        self.report.step(f"writing paragraph {self.written} of {self.paragraphs}")


def _write_with_run(
    policy: Path,
    prompt: str,
    target: tuple[list[float] | None, str | None],
    steps: _ParagraphSteps,
    seed: int | None,
    backend: str | None,
    reward: str | None,
):
    """Write with the training run in ``policy``; ``target`` is ``(hrv, source)``, both None for the
    run's own. The reward is ``reward`` or, by default, the one the run trained on."""
    from resonance_os.evolution.hr_grpo_run import KIND as HR_GRPO
    from resonance_os.evolution.hr_policy import open_writing_run, run_reward, write_with_policy
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter

    run = open_writing_run(policy)
    chosen = reward or run_reward(run)
    # an HR-GRPO run drafts with its own fine-tuned model; --backend with it is refused there
    grpo = run.kind == HR_GRPO
    writer = None if grpo and backend is None else HumanResonantWriter(backend=backend, reward=chosen)
    steps.first(f"the policy in {policy}")
    target_hrv, source = target
    return write_with_policy(
        policy,
        prompt,
        target_hrv=target_hrv,
        num_paragraphs=steps.paragraphs,
        seed=seed,
        writer=writer,
        target_source=source,
        between_paragraphs=steps.next_paragraph,
        reward=chosen,
    )


def _write_fresh(
    prompt: str,
    target: list[float],
    source: str,
    steps: _ParagraphSteps,
    seed: int | None,
    backend: str | None,
    no_adapter: bool,
    store: str | None,
    reward: str | None,
):
    """Write with a new writer on ``backend``, drafting with the profile's voice adapter where it has one
    (unless ``no_adapter``), and say so."""
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter
    from resonance_os.generation.voice_adapter import profile_key_of

    writer = HumanResonantWriter(backend=backend, adapter=not no_adapter, adapter_store=store, reward=reward)
    voice = writer.voice_backend(source)
    drafter = writer.backend_name if voice is None else voice.name
    if voice is not None:
        steps.report.note(f"using the {profile_key_of(source)} voice adapter (--no-adapter: without it)")
    steps.first(drafter)
    return writer.generate(
        prompt,
        target_hrv=target,
        num_paragraphs=steps.paragraphs,
        seed=seed,
        target_source=source,
        between_paragraphs=steps.next_paragraph,
    )


def print_article(article) -> None:
    """The article's text, a draft-mode notice for the template composer, and its HRV table."""
    from resonance_os.generation.human_resonant_writer import DRAFT_MODE

    console.print(article.text, markup=False)
    if article.backend.startswith(DRAFT_MODE):
        console.print(
            "[yellow]template draft mode: the built-in composer, not a language model; install the "
            "local model (make install) or pass --backend local|openai for real drafts[/yellow]"
        )
    console.print()
    console.print(article_table(article))
