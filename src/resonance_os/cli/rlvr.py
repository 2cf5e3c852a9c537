"""``resonance rlvr train CONFIG.toml``: GRPO on programming problems with sandbox rewards, pass@k
on held-out problems before and after (docs/verify.md, "An RLVR run").

The TOML has the [model] and [grpo] tables of ``resonance llm train`` and an optional [rlvr] table of
``rlvr.RLVRConfig`` fields::

    [model]
    path = "smollm2"              # or a local Hugging Face folder
    lora_rank = 16

    [grpo]
    loss_type = "gspo_plus"       # dapo, gspo, gspo_plus, ... (llm.losses.LOSS_TYPES)
    group_size = 6
    max_new_tokens = 96
    seed = 0

    [rlvr]                        # all optional; these are the defaults
    source = "humaneval"          # "humaneval", "builtin" (stdin/stdout set) or a problem JSONL file
    max_solution_lines = 1        # HumanEval's one-line problems (37)
    heldout = 0.33
    eval_samples = 4

Relative paths are read from the TOML's folder. Any mistake is one line naming the table and field,
exit code 2. ``--ray ADDRESS`` (``auto``, ``host:port`` or ``local``) trains with ``AsyncGRPO``, its
generation worker and the sandbox pool Ray actors on that cluster; ``--max-policy-lag K`` alone does
the same on local processes; with neither, GRPO and the verifier pool run in this process.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.llm import build_policy, grpo_table, model_table, read_toml
from resonance_os.rl.errors import ConfigError

console = Console(highlight=False)
app = typer.Typer(
    help="RL with verifiable rewards: GRPO on programming problems, rewarded by the code sandbox.",
    no_args_is_help=True,
)

TABLES = ("model", "grpo", "rlvr")


def load_rlvr_spec(path: Path) -> tuple[str, str | None, Any, Any, Any]:
    """``(model_path, device, PolicyConfig, GRPOConfig, RLVRConfig)`` from the TOML; a ``ConfigError``
    names the table and field of any mistake."""
    from resonance_os.rlvr import RLVRConfig

    raw = read_toml(path, TABLES, optional=("rlvr",))
    model_path, device, policy = model_table(path, raw["model"])
    grpo = grpo_table(path, raw["grpo"])
    table = dict(raw.get("rlvr", {}))
    source = table.get("source")
    if isinstance(source, str) and source not in ("humaneval", "builtin"):
        file = Path(source) if Path(source).is_absolute() else path.resolve().parent / source
        if not file.is_file():
            raise ConfigError(
                f"{path.name}: rlvr.source={source!r}: no such problem file; give 'humaneval', 'builtin' or "
                "the path of a problem JSONL file"
            )
        table["source"] = str(file)
    try:
        rlvr = RLVRConfig.from_dict(table)
    except (ConfigError, TypeError) as exc:
        message = str(exc).replace("RLVRConfig.", "rlvr.", 1).replace("RLVR settings", "rlvr settings")
        raise ConfigError(f"{path.name}: {message}") from None
    return model_path, device, policy, grpo, rlvr


def run_training(
    config: Path,
    out: Path,
    steps: int,
    seed: int | None,
    progress: bool,
    ray: str | None = None,
    max_policy_lag: int | None = None,
) -> Any:
    """Parse the config, build the policy, evaluate, train ``steps`` steps, evaluate; results in ``out``.
    With ``ray`` or ``max_policy_lag``, the asynchronous pipeline on Ray actors or local processes."""
    from resonance_os.distributed import placement_for
    from resonance_os.rlvr import RLVRTask, run_rlvr

    model_path, device, policy_config, grpo, rlvr = load_rlvr_spec(config)
    if seed is not None:
        grpo = replace(grpo, seed=seed)
    elif grpo.seed is None:
        raise ConfigError(
            f"{config.name}: grpo.seed is missing; an RLVR run needs a seed (set it, or pass --seed)"
        )
    RLVRTask(rlvr)  # loads and splits the problems now: a bad problem file fails before the model loads
    if ray is None and max_policy_lag is None:
        placement = None
    else:  # a missing Ray or an unreachable cluster fails here, before the model loads
        placement = placement_for(ray)
    try:
        policy = build_policy(model_path, device, policy_config)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.toml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
        return run_rlvr(
            policy,
            grpo,
            rlvr,
            steps,
            out=out,
            progress_bar=progress,
            placement=placement,
            max_policy_lag=1 if max_policy_lag is None else max_policy_lag,
        )
    finally:
        if placement is not None:
            placement.close()


def _report(result: Any, out: Path) -> None:
    def fmt(value: float | None) -> str:
        return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"

    table = Table(
        "held out",
        "before",
        "after",
        title=f"{result.loss_type}, {result.steps} steps ({result.pipeline}): {len(result.heldout_ids)} "
        f"held-out problems, {result.after.samples} samples each",
    )
    for k in sorted(result.after.pass_at):
        table.add_row(f"pass@{k}", fmt(result.before.pass_at.get(k)), fmt(result.after.pass_at[k]))
    table.add_row(
        "problems solved at least once",
        str(sum(c > 0 for c in result.before.passes)),
        str(sum(c > 0 for c in result.after.passes)),
    )
    first, last = result.history[0], result.history[-1]
    table.add_row("train pass rate (step 1 -> last)", fmt(first["pass_rate"]), fmt(last["pass_rate"]))
    console.print(table)
    console.print(
        f"report in {out / 'report.json'}, metrics in {out / 'metrics.jsonl'}, checkpoint in {out / 'checkpoint'}"
    )


@app.command("train")
def train(
    config: Path = typer.Argument(..., help="TOML file with the tables model, grpo and (optional) rlvr."),
    out: Path = typer.Option(Path("runs/rlvr"), "--out", help="Run folder: report, metrics, checkpoint."),
    steps: int = typer.Option(20, "--steps", min=1, help="GRPO steps to train for."),
    seed: int = typer.Option(None, "--seed", help="Overrides the grpo table's seed: same seed, same run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a live progress bar."),
    ray: str = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Train with AsyncGRPO, the generation worker and sandbox pool as Ray actors on this cluster "
        "('auto', 'host:port', or 'local' to start one here; needs the ray extra).",
    ),
    max_policy_lag: int = typer.Option(
        None,
        "--max-policy-lag",
        min=0,
        help="Batches in flight for AsyncGRPO (default 1 with --ray); alone, runs it on local processes.",
    ),
) -> None:
    """Train with GRPO on programming problems rewarded by the sandbox; print held-out pass@k before and after."""
    result = run_reporting_user_errors(
        lambda: run_training(config, out, steps, seed, progress, ray, max_policy_lag)
    )
    _report(result, out)
