"""``resonance train`` (PPO in HRWritingEnv toward a profile) and ``resonance demo`` (the ``make run`` job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import fail, run_reporting_user_errors
from resonance_os.cli.generate import article_table, print_article
from resonance_os.cli.hrv_option import HrvOpt, ProfileOpt, StoreOpt, parse_hrv_option
from resonance_os.cli.reward_option import RewardOpt
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.evolution.base_models import SMOLLM2

console = Console(highlight=False)

METRIC_ROWS = (
    "episode_reward_mean",
    "episode_reward_std",
    "loss",
    "policy_loss",
    "value_loss",
    "entropy_loss",
    "explained_variance",
    "approx_kl",
    "clip_fraction",
    "learning_rate",
    "fps",
)
GRPO_ROWS = (
    "episode_reward_mean",
    "episode_reward_std",
    "reward_resonance",
    "reward_fluency",
    "reward_coherence",
    "reward_topic",
    "reward_repetition",
    "loss",
    "clip_fraction",
    "grad_norm",
    "completion_length",
    "time_step",
)
METHODS = ("ppo", "grpo")
DEFAULT_PPO_TIMESTEPS, DEFAULT_GRPO_STEPS = 5000, 8
EVAL_EPISODES = 20
DEMO_PROMPT = "remote work and team culture"


def _train(
    profile: str | None,
    hrv: str | None,
    timesteps: int,
    out: Path,
    seed: int | None,
    store: str | None,
    max_episode_steps: int | None,
    progress: bool,
    reward: str | None,
) -> dict[str, Any]:
    from resonance_os.evolution.hr_policy import save_run
    from resonance_os.evolution.hr_rl_trainer import (
        DEFAULT_MAX_EPISODE_STEPS,
        HRWritingEnv,
        evaluate_writing_policy,
        train_hr_ppo,
    )

    if profile is not None and hrv is not None:
        raise fail("give --profile or --hrv, not both")
    target = parse_hrv_option(hrv) if hrv is not None else None
    max_episode_steps = max_episode_steps or DEFAULT_MAX_EPISODE_STEPS
    env = HRWritingEnv(
        target_hrv=target, profile=profile, store=store, max_episode_steps=max_episode_steps, reward=reward
    )
    model = train_hr_ppo(env, timesteps=timesteps, seed=seed, log_dir=out, progress_bar=progress)
    save_run(model, env, out)
    heldout = HRWritingEnv(**{**env.settings(), "split": "heldout"})
    evaluation = {
        name: evaluate_writing_policy(heldout, policy, episodes=EVAL_EPISODES, seed=10_000)
        for name, policy in (
            ("trained policy", model),
            ("no edits", "zero"),
            ("random edits", "random"),
            ("feedback rule (target - measured)", "feedback"),
            ("refiner loop", "refiner"),
        )
    }
    return {"model": model, "env": env, "metrics": model.history[-1], "evaluation": evaluation}


def _report(result: dict[str, Any], out: Path) -> None:
    from resonance_os.evolution.hr_rl_trainer import success_indicators

    metrics = result["metrics"]
    table = Table("metric", "value", title=f"PPO after {metrics['timesteps']} timesteps (last update)")
    for name in METRIC_ROWS:
        value = metrics.get(name)
        table.add_row(name, "n/a" if value is None else f"{value:.4g}")
    console.print(table)
    evaluation = result["evaluation"]
    table = Table(
        "policy",
        "final draft's reward",
        "std",
        "gain over first draft",
        "resonance (style term)",
        "quality factor",
        title=f"evaluation, {EVAL_EPISODES} seeded episodes on held-out drafts, same edit budget",
    )
    for name, row in evaluation.items():
        table.add_row(
            name,
            f"{row['mean']:.3f}",
            f"{row['std']:.3f}",
            f"{row['gain']:+.3f}",
            f"{row['resonance']:.3f}",
            f"{row['quality']:.3f}",
        )
    console.print(table)
    measured = {
        "reward_per_step": evaluation["trained policy"]["mean"],
        "loss": metrics.get("loss"),
        "explained_variance": metrics.get("explained_variance"),
    }
    table = Table("success indicator (spec)", "measured", "met", title="success indicators")
    for label, value, met in success_indicators(measured):
        table.add_row(
            label,
            "n/a" if value is None else f"{value:.3f}",
            "[green]yes[/green]" if met else "[red]no[/red]",
        )
    console.print(table)
    console.print(f"model, env settings and metrics saved in {out} (plot them: resonance plot {out})")


def _train_grpo(
    profile: str | None,
    hrv: str | None,
    steps: int,
    out: Path,
    seed: int | None,
    store: str | None,
    model: str,
    device: str | None,
    progress: bool,
    early_stop_every: int | None,
    max_drift: float | None,
    bf16: bool,
    reward: str | None,
) -> Any:
    from resonance_os.evolution.hr_grpo import HR_MAX_DRIFT, train_hr_grpo
    from resonance_os.evolution.hr_grpo_run import save_hr_grpo_run

    if profile is not None and hrv is not None:
        raise fail("give --profile or --hrv, not both")
    policy = None
    if model != SMOLLM2:
        from resonance_os.evolution.base_models import base_model
        from resonance_os.llm.policy import LMPolicy, PolicyConfig

        policy = LMPolicy(*base_model(model, device), PolicyConfig(lora_rank=16, lora_alpha=32))
    trainer = train_hr_grpo(
        profile=profile,
        target_hrv=parse_hrv_option(hrv) if hrv is not None else None,
        steps=steps,
        policy=policy,
        store=store,
        log_dir=out,
        seed=seed,
        device=device,
        progress_bar=progress,
        early_stop_every=early_stop_every,
        reward=reward,
        max_drift=HR_MAX_DRIFT if max_drift is None else max_drift,
        config={"rollout_dtype": "bfloat16", "mixed_precision": "bfloat16"} if bf16 else None,
    )
    save_hr_grpo_run(trainer, out, base=model)
    return trainer


def _report_grpo(trainer: Any, out: Path) -> None:
    first, last = trainer.history[0], trainer.history[-1]
    table = Table(
        "metric", "step 1", f"step {last['timesteps']}", title="HR-GRPO (writing reward on the drafts)"
    )
    for name in GRPO_ROWS:
        if name in last:
            table.add_row(
                name, *("n/a" if row.get(name) is None else f"{row[name]:.4g}" for row in (first, last))
            )
    console.print(table)
    stop = trainer.hr_early_stopping
    if stop is not None:
        ended = "ran to the end" if stop.stopped_at is None else f"stopped at step {stop.stopped_at} (drift)"
        best = stop.best
        console.print(
            f"early stopping: {ended}; kept the weights of step {best['step']} (held-out reward "
            f"{best['heldout_reward']:.3f}, drift {best['drift']:+.3f} nats/token)"
        )
    console.print(
        f"adapter, run settings and metrics saved in {out} (write with it: resonance generate TOPIC "
        f"--policy {out}; plot: resonance plot {out})"
    )


def _check_method_options(
    method: str,
    max_episode_steps: int | None,
    model: str,
    device: str | None,
    early_stop_every: int | None,
    max_drift: float | None,
    bf16: bool,
) -> None:
    """Refuse options of the other method, and --max-drift without a check to apply it at."""
    if method not in METHODS:
        raise fail(f"--method {method!r} is not one of {', '.join(METHODS)}")
    if method == "grpo" and max_episode_steps is not None:
        raise fail("--max-episode-steps is for --method ppo (GRPO drafts whole paragraphs, no edit episodes)")
    if method == "ppo" and (model != SMOLLM2 or device is not None):
        raise fail("--model and --device are for --method grpo (PPO trains a small edit policy on the CPU)")
    if method == "ppo" and (early_stop_every is not None or max_drift is not None or bf16):
        raise fail("--early-stop-every, --max-drift and --bf16 are for --method grpo")
    if max_drift is not None and early_stop_every is None:
        raise fail("--max-drift needs --early-stop-every N (how often to check the held-out topics)")
    if max_drift is not None and not max_drift > 0:
        raise fail(f"--max-drift {max_drift} must be > 0 nats per token")


def train(
    profile: str = ProfileOpt,
    hrv: str = HrvOpt,
    method: str = typer.Option(
        "ppo",
        "--method",
        help="ppo: a PPO policy learns which edits to make to drafted paragraphs (HRWritingEnv); grpo: "
        "GRPO fine-tunes the drafting language model itself (LoRA) on the writing reward (HR-GRPO).",
    ),
    timesteps: int = typer.Option(
        None,
        "--timesteps",
        min=0,
        help="ppo: environment steps (default 5000); grpo: GRPO steps, each 2 topics x 4 drafts (default 8; "
        "about 30 s a step for SmolLM2 on a 2-core CPU).",
    ),
    out: Path = typer.Option(
        None,
        "--out",
        help="Run folder for the model, settings and metrics (default runs/hr-ppo or runs/hr-grpo).",
    ),
    seed: int = typer.Option(None, "--seed", help="Random seed: same seed, same training run."),
    max_episode_steps: int = typer.Option(
        None, "--max-episode-steps", min=1, help="ppo: revisions per episode (default: the env's, 3)."
    ),
    model: str = typer.Option(
        SMOLLM2, "--model", help="grpo: the base language model, 'smollm2' or a local Hugging Face folder."
    ),
    device: str = typer.Option(
        None, "--device", help="grpo: 'cpu' or 'cuda' (default: where the model loads)."
    ),
    early_stop_every: int = typer.Option(
        None,
        "--early-stop-every",
        min=1,
        help="grpo: every N steps sample 4 held-out topics; stop when the text drifts from the base model "
        "(--max-drift) and keep the weights of the best check.",
    ),
    max_drift: float = typer.Option(
        None,
        "--max-drift",
        help="grpo: nats per token the base model's log-likelihood of the held-out paragraphs may fall "
        "(default 0.25; with --early-stop-every).",
    ),
    bf16: bool = typer.Option(
        False,
        "--bf16",
        help="grpo: sample from a bf16 copy of the model and update in mixed precision, with TRL's "
        "importance correction (about 1.5x faster a step on a CPU with AMX or on a GPU; default float32).",
    ),
    reward: str = RewardOpt,
    store: str = StoreOpt,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a live progress bar."),
) -> None:
    """Train toward a profile and save the run: PPO edits drafts (the spec's configuration), or
    --method grpo fine-tunes the drafting model."""
    _check_method_options(method, max_episode_steps, model, device, early_stop_every, max_drift, bf16)
    if method == "grpo":
        out = out or Path("runs/hr-grpo")
        steps = DEFAULT_GRPO_STEPS if timesteps is None else timesteps
        options = (model, device, progress, early_stop_every, max_drift, bf16, reward)
        trainer = run_reporting_user_errors(
            lambda: _train_grpo(profile, hrv, steps, out, seed, store, *options)
        )
        _report_grpo(trainer, out)
        return
    out = out or Path("runs/hr-ppo")
    steps = DEFAULT_PPO_TIMESTEPS if timesteps is None else timesteps
    if steps < 1:
        raise fail("--timesteps must be >= 1 for ppo")
    result = run_reporting_user_errors(
        lambda: _train(profile, hrv, steps, out, seed, store, max_episode_steps, progress, reward)
    )
    _report(result, out)


def demo(
    out: Path = typer.Option(Path("runs/demo"), "--out", help="Run folder for the demo's training run."),
    timesteps: int = typer.Option(5000, "--timesteps", min=1, help="Environment steps to train for."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
) -> None:
    """The `make run` job: measure the sample article, draft an article with the default backend (the
    local language model when installed), train PPO on the default profile, write with it."""
    from resonance_os.evolution.hr_policy import write_with_policy
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter
    from resonance_os.profiles.templates import DEFAULT_PROFILE
    from resonance_os.profiling import sample_article
    from resonance_os.profiling.hrv_extractor import HRVExtractor
    from resonance_os.similarity.metrics import SimilarityCalculator

    text = sample_article()
    hrv = HRVExtractor().extract(text)
    target = DEFAULT_PROFILE.vector.to_list()
    table = Table(
        "dimension", "sample article", f"profile {DEFAULT_PROFILE.key}", title="1. HRV of the sample article"
    )
    for name, value, goal in zip(HRV_DIMENSIONS, hrv, target):
        table.add_row(name, f"{value:.3f}", f"{goal:.3f}")
    style = SimilarityCalculator("manhattan").calculate_similarity(hrv, target)
    table.caption = f"style match with {DEFAULT_PROFILE.key}: {style:.3f} (1 - mean |gap|, the writing reward's style term)"
    console.print(table)

    writer = run_reporting_user_errors(HumanResonantWriter)
    source = f"profile {DEFAULT_PROFILE.key}"
    voice = run_reporting_user_errors(lambda: writer.voice_backend(source))
    drafter = writer.backend_name if voice is None else voice.name
    console.print(
        f"\n[bold]2. An article drafted by the default backend ({drafter}) toward {DEFAULT_PROFILE.key}[/bold]"
    )
    if voice is not None:
        console.print(f"using the {DEFAULT_PROFILE.key} voice adapter")
    print_article(
        run_reporting_user_errors(
            lambda: writer.generate(DEMO_PROMPT, target_hrv=target, seed=seed, target_source=source)
        )
    )

    console.print(
        f"\n[bold]3. Training PPO in HRWritingEnv toward {DEFAULT_PROFILE.key} for {timesteps} timesteps[/bold]"
    )
    result = run_reporting_user_errors(
        lambda: _train(None, None, timesteps, out, seed, None, None, True, None)
    )
    _report(result, out)

    console.print(f"\n[bold]4. The same prompt drafted by {drafter}, revised by the trained policy[/bold]")
    article = run_reporting_user_errors(
        lambda: write_with_policy(
            (result["model"], result["env"]),
            DEMO_PROMPT,
            target_hrv=target,
            seed=seed,
            writer=writer,
            target_source=source,
        )  # fmt: skip
    )
    console.print(article.text, markup=False)
    console.print(article_table(article))
