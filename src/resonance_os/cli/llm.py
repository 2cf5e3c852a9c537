"""``resonance llm train CONFIG.toml``: GRPO fine-tuning of a language model from a TOML file.

The TOML has four tables (docs/llm_rl.md, "From the shell")::

    [model]                       # "smollm2" (the project's reference model) or a local HF folder
    path = "smollm2"
    lora_rank = 16                # any PolicyConfig field; device = "cpu" / "cuda" (optional)

    [grpo]                        # any GRPOConfig field
    group_size = 8
    max_new_tokens = 32

    [data]                        # prompts_file (one prompt a line, optional "<TAB>answer") or prompts
    prompts = ["3 1 2", "9 4 7"]
    answers = ["1 2 3", "4 7 9"]  # optional, one per prompt, for exact_match / contains

    [reward]                      # built-in rewards of llm.rewards by name: a weight, or a table
    digits_sorted = 1.0
    contains = { weight = 0.1, text = "1" }

Relative paths are read from the TOML's folder. Any mistake is one line naming the table and field,
exit code 2.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.rl.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the tomli backport (same API), if installed
    try:
        import tomli as tomllib
    except ImportError:  # pragma: no cover - only on 3.10 without tomli
        tomllib = None  # type: ignore[assignment]

console = Console(highlight=False)
app = typer.Typer(
    help="Fine-tune language models with RL (GRPO) on verifiable rewards.", no_args_is_help=True
)

TABLES = ("model", "grpo", "data", "reward")
DATA_KEYS = ("prompts", "prompts_file", "answers")
SUMMARY_ROWS = (
    "episode_reward_mean",
    "episode_reward_std",
    "pass_rate",
    "loss",
    "kl",
    "approx_kl",
    "clip_fraction",
    "grad_norm",
    "entropy",
    "completion_length",
    "tokens_per_second",
    "time_generate",
    "time_train",
    "time_step",
)


@dataclass
class TrainSpec:
    """A parsed, checked ``llm train`` TOML file."""

    model_path: str
    device: str | None
    policy: Any  # PolicyConfig
    grpo: Any  # GRPOConfig
    prompts: list[str]
    answers: dict[str, str] | None
    rewards: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)


def _where(path: Path, table: str, key: str | None = None) -> str:
    """``run.toml: grpo.group_size`` (dotted, not ``[grpo]``: the error line is printed as rich markup)."""
    return f"{path.name}: {table}" + (f".{key}" if key else "")


def read_toml(path: Path, tables: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    """The TOML at ``path`` as a dict, checked to hold exactly ``tables`` (``optional`` may be absent),
    each a table; raises ``ConfigError`` naming the file and table."""
    if not path.is_file():
        raise ConfigError(f"no config file at {path}")
    if tomllib is None:  # pragma: no cover
        raise ConfigError("reading TOML on Python 3.10 needs tomli: pip install tomli")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path.name} is not valid TOML: {exc}") from None
    unknown = sorted(set(raw) - set(tables))
    if unknown:
        raise ConfigError(f"{path.name}: unknown table(s) {unknown}; the tables are {list(tables)}")
    for name in tables:
        if name not in raw:
            if name in optional:
                continue
            raise ConfigError(f"{path.name}: missing table {name} (a [{name}] header)")
        if not isinstance(raw[name], dict):
            raise ConfigError(f"{path.name}: {name} must be a table")
    return raw


def model_table(path: Path, table: dict[str, Any]) -> tuple[str, str | None, Any]:
    """``(model_path, device, PolicyConfig)`` from the [model] table; a relative folder is read from
    the TOML's folder."""
    from resonance_os.llm.policy import PolicyConfig

    model = dict(table)
    model_path = model.pop("path", None)
    if not isinstance(model_path, str) or not model_path:
        raise ConfigError(f'{_where(path, "model", "path")} must be "smollm2" or a local Hugging Face folder')
    if model_path != "smollm2":
        folder = Path(model_path) if Path(model_path).is_absolute() else path.resolve().parent / model_path
        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"{_where(path, 'model', 'path')}={model_path!r}: no Hugging Face model folder there"
            )
        model_path = str(folder)
    device = model.pop("device", None)
    if device is not None and device not in ("cpu", "cuda"):
        raise ConfigError(f'{_where(path, "model", "device")}={device!r}: must be "cpu" or "cuda"')
    try:
        policy = PolicyConfig.from_dict(model)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{_where(path, 'model')}: {str(exc).replace('PolicyConfig.', 'model.')}") from None
    return model_path, device, policy


def grpo_table(path: Path, table: dict[str, Any]) -> Any:
    """The ``GRPOConfig`` of the [grpo] table; an unknown or bad field is named."""
    from resonance_os.llm.grpo import GRPOConfig

    known = set(GRPOConfig.__dataclass_fields__)
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{_where(path, 'grpo', unknown[0])}: unknown GRPO setting; known: {sorted(known)}")
    try:
        return GRPOConfig.from_dict(table)
    except ConfigError as exc:  # "GRPOConfig.group_size=1: ..." -> "run.toml: grpo.group_size=1: ..."
        raise ConfigError(f"{path.name}: {str(exc).replace('GRPOConfig.', 'grpo.', 1)}") from None


def load_spec(path: Path) -> TrainSpec:
    """Read and check the TOML; raises ``ConfigError`` naming the table and field of any mistake."""
    from resonance_os.llm.rewards import REWARDS, build_reward

    raw = read_toml(path, TABLES)
    base = path.resolve().parent
    model_path, device, policy = model_table(path, raw["model"])
    grpo = grpo_table(path, raw["grpo"])

    # [data]
    data = raw["data"]
    unknown = sorted(set(data) - set(DATA_KEYS))
    if unknown:
        raise ConfigError(f"{_where(path, 'data', unknown[0])}: unknown key; the keys are {list(DATA_KEYS)}")
    if ("prompts" in data) == ("prompts_file" in data):
        raise ConfigError(
            f'{_where(path, "data")}: give exactly one of prompts = [...] or prompts_file = "..."'
        )
    answers_list: list[str] | None = None
    if "prompts" in data:
        prompts = data["prompts"]
        if (
            not isinstance(prompts, list)
            or not prompts
            or not all(isinstance(p, str) and p.strip() for p in prompts)
        ):
            raise ConfigError(
                f"{_where(path, 'data', 'prompts')} must be a non-empty list of non-empty strings"
            )
    else:
        file = Path(data["prompts_file"]) if isinstance(data["prompts_file"], str) else None
        if file is None:
            raise ConfigError(f"{_where(path, 'data', 'prompts_file')} must be a path string")
        file = file if file.is_absolute() else base / file
        if not file.is_file():
            raise ConfigError(
                f"{_where(path, 'data', 'prompts_file')}={data['prompts_file']!r}: no such file"
            )
        lines = [line for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not lines:
            raise ConfigError(f"{_where(path, 'data', 'prompts_file')}: {file.name} has no prompts")
        prompts = [line.split("\t", 1)[0].strip() for line in lines]
        if any("\t" in line for line in lines):
            if not all("\t" in line for line in lines):
                raise ConfigError(
                    f"{_where(path, 'data', 'prompts_file')}: some lines of {file.name} have a <TAB>answer and "
                    "some do not; give an answer on every line or on none"
                )
            answers_list = [line.split("\t", 1)[1].strip() for line in lines]
    if "answers" in data:
        if answers_list is not None:
            raise ConfigError(f"{_where(path, 'data', 'answers')}: the prompts file already has answers")
        answers_list = data["answers"]
        if not isinstance(answers_list, list) or not all(isinstance(a, str) for a in answers_list):
            raise ConfigError(f"{_where(path, 'data', 'answers')} must be a list of strings, one per prompt")
        if len(answers_list) != len(prompts):
            raise ConfigError(
                f"{_where(path, 'data', 'answers')} has {len(answers_list)} answers for {len(prompts)} prompts"
            )
    answers = dict(zip(prompts, answers_list, strict=True)) if answers_list is not None else None

    # [reward]
    rewards: list[tuple[str, float, dict[str, Any]]] = []
    if not raw["reward"]:
        raise ConfigError(
            f"{_where(path, 'reward')}: name at least one reward ({', '.join(sorted(REWARDS))})"
        )
    for name, value in raw["reward"].items():
        options = dict(value) if isinstance(value, dict) else {"weight": value}
        weight = options.pop("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            raise ConfigError(f"{_where(path, 'reward', name)}: weight={weight!r} must be a finite number")
        try:
            build_reward(name, answers, **options)  # checks the name, the options and the answers now
        except ConfigError as exc:
            raise ConfigError(f"{_where(path, 'reward', name)}: {exc}") from None
        rewards.append((name, float(weight), options))
    return TrainSpec(model_path, device, policy, grpo, prompts, answers, rewards)


def build_policy(model_path: str, device: str | None, config: Any) -> Any:
    """The ``LMPolicy`` of a [model] table: SmolLM2 from the reference-model cache, or a local folder."""
    from resonance_os.llm.policy import LMPolicy

    if model_path == "smollm2":
        from resonance_os.quality import reference_lm

        tokenizer, model = reference_lm.load_model(str(reference_lm.default_cache_dir()))
        if device is not None:
            model.to(device)
        return LMPolicy(tokenizer, model, config)
    return LMPolicy.from_pretrained(model_path, config, device=device)


def run_training(config: Path, out: Path, steps: int, seed: int | None, progress: bool) -> Any:
    """Parse the config, build policy, rewards and trainer, train ``steps`` steps and save to ``out``."""
    from dataclasses import replace

    from resonance_os.llm.grpo import GRPO
    from resonance_os.llm.rewards import build_reward

    spec = load_spec(config)
    grpo = spec.grpo if seed is None else replace(spec.grpo, seed=seed)
    reward_fns = [
        (build_reward(name, spec.answers, **options), weight) for name, weight, options in spec.rewards
    ]
    policy = build_policy(spec.model_path, spec.device, spec.policy)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.toml").write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    trainer = GRPO(policy, reward_fns, spec.prompts, grpo, log_dir=out)
    trainer.learn(steps, progress_bar=progress)
    trainer.save(out / "checkpoint")
    return trainer


def _report(trainer: Any, out: Path) -> None:
    history = trainer.history
    first, last = history[0], history[-1]
    table = Table("metric", "step 1", f"step {len(history)}", title=f"GRPO, {len(history)} steps")
    for name in SUMMARY_ROWS + tuple(k for k in last if k.startswith("reward_")):
        if name not in last:
            continue

        def fmt(value: Any) -> str:
            return (
                "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"
            )

        table.add_row(name, fmt(first.get(name)), fmt(last.get(name)))
    console.print(table)
    console.print(
        f"checkpoint in {out / 'checkpoint'}, metrics in {out / 'metrics.jsonl'} (resonance plot {out})"
    )


@app.command("train")
def train(
    config: Path = typer.Argument(
        ..., help="TOML file with the tables model, grpo, data and reward (docs/llm_rl.md)."
    ),
    out: Path = typer.Option(
        Path("runs/llm-grpo"), "--out", help="Run folder: metrics, checkpoint, config copy."
    ),
    steps: int = typer.Option(50, "--steps", min=1, help="GRPO steps to train for."),
    seed: int = typer.Option(None, "--seed", help="Overrides the grpo table's seed: same seed, same run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a live progress bar."),
) -> None:
    """Fine-tune a language model with GRPO on built-in verifiable rewards, from a TOML file."""
    trainer = run_reporting_user_errors(lambda: run_training(config, out, steps, seed, progress))
    _report(trainer, out)
