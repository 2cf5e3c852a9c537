"""``resonance agents train CONFIG.toml``: train an agent from its traces against a running
``resonance serve`` (docs/agents.md, "7. Train").

The TOML::

    [server]
    url = "http://127.0.0.1:8000"   # the server the agents call and the store lives in
    key_env = "RESONANCE_API_KEY"   # the environment variable holding the tenant's key

    [model]                         # the policy: the model the server serves (RESONANCE_OPENAI_MODEL)
    path = "smollm2"
    lora_rank = 16

    [agent]
    function = "agent.py:run"       # run(task, llm) -> reward; module:function or file.py:function
    tasks = "tasks.json"            # [{"id": ..., "split": "train" | "heldout", ...}, ...]
    heldout = 6                     # evaluate on this many held-out tasks, spread over the list (default all)
    runners = 4                     # local runner processes

    [train]                         # AgentTrainConfig fields (all optional) and UpdateConfig's
    adapter = "sql-agent"           # learning_rate, loss_type, epsilon, max_grad_norm
    steps = 3

    [warmup]                        # ``resonance agents warmup`` (optional; needs no server)
    demonstrations = "agent.py:demonstration"   # task -> {"prompt": messages, "completion": reply}
    steps = 60                      # WarmupConfig: steps, batch_size, learning_rate, seed

``resonance agents warmup CONFIG.toml --out DIR`` fine-tunes the adapter on the training tasks'
demonstrations (SFT) and saves ``DIR/checkpoint``; ``resonance agents train CONFIG.toml --init
DIR/checkpoint`` starts the RL from it. Relative paths are read from the TOML's folder. A mistake is
one line naming the table and field, exit code 2.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import typer

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.cli.llm import build_policy, model_table, read_toml
from resonance_os.rl.errors import ConfigError

app = typer.Typer(help="Train an agent from its traces (Agent Lightning's protocol).", no_args_is_help=True)

TABLES = ("server", "model", "agent", "train", "warmup")
UPDATE_FIELDS = ("learning_rate", "loss_type", "epsilon", "max_grad_norm")


def _path(config: Path, value: Any, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{config.name}: {where} must be a path")
    path = Path(value)
    return path if path.is_absolute() else config.resolve().parent / path


def load_tasks(file: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(train, heldout)`` from a JSON list of task objects with a ``split``."""
    try:
        tasks = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the tasks {file}: {exc}") from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        raise ConfigError(f"{file}: the tasks must be a JSON list of objects")
    train = [t for t in tasks if t.get("split", "train") == "train"]
    heldout = [t for t in tasks if t.get("split") == "heldout"]
    if not train:
        raise ConfigError(f"{file}: no task has split 'train'")
    return train, heldout


def _function(config: Path, spec: Any, where: str) -> str:
    """A checked ``module:function`` / ``file.py:function`` spec, a relative file read from the TOML's folder."""
    from resonance_os.traces.runner import load_agent

    where_file, _, name = str(spec).rpartition(":")
    if where_file.endswith(".py") and not Path(where_file).is_absolute():
        spec = f"{config.resolve().parent / where_file}:{name}"
    try:
        load_agent(str(spec))
    except ValueError as exc:
        raise ConfigError(f"{config.name}: {where}: {exc}") from None
    return str(spec)


def load_spec(config: Path) -> dict[str, Any]:
    """Everything the run needs from the TOML, checked before any model loads."""
    from resonance_os.traces.trainer import AgentTrainConfig
    from resonance_os.traces.update import UpdateConfig

    raw = read_toml(config, TABLES, optional=("train", "warmup"))
    server = raw["server"]
    url = server.get("url", "http://127.0.0.1:8000")
    key_env = server.get("key_env", "RESONANCE_API_KEY")
    key = os.environ.get(key_env)
    if not key:
        raise ConfigError(
            f"{config.name}: server.key_env: ${key_env} is not set; export the tenant's API key there"
        )
    model_path, device, policy_config = model_table(config, raw["model"])
    agent = raw["agent"]
    function = _function(config, agent.get("function", ""), "agent.function")
    train_tasks, heldout = load_tasks(_path(config, agent.get("tasks"), "agent.tasks"))
    limit = agent.get("heldout", len(heldout))
    if not isinstance(limit, int) or limit < 0:
        raise ConfigError(f"{config.name}: agent.heldout={limit!r} must be an integer >= 0")
    heldout = heldout[:: max(1, -(-len(heldout) // limit))][:limit] if limit else []
    runners = agent.get("runners", 4)
    if not isinstance(runners, int) or runners < 1:
        raise ConfigError(f"{config.name}: agent.runners={runners!r} must be an integer >= 1")
    table = dict(raw.get("train", {}))
    update = {k: table.pop(k) for k in UPDATE_FIELDS if k in table}
    known = {f.name for f in fields(AgentTrainConfig)} - {"update"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{config.name}: train.{unknown[0]}: unknown setting; known: {sorted(known | set(UPDATE_FIELDS))}"
        )
    try:
        train = AgentTrainConfig(**table, update=UpdateConfig(**update))
    except (TypeError, ConfigError) as exc:
        raise ConfigError(f"{config.name}: train: {exc}") from None
    return {"url": url, "key": key, "model": (model_path, device, policy_config), "function": function,
            "runners": runners, "train": train, "tasks": train_tasks, "heldout": heldout}  # fmt: skip


def load_warmup(config: Path) -> dict[str, Any]:
    """The warm-up's model, demonstrations (training tasks; held-out ones for the validation loss) and
    ``WarmupConfig``, checked before any model loads."""
    from resonance_os.traces.runner import load_agent
    from resonance_os.traces.warmup import WarmupConfig, demonstrations

    raw = read_toml(config, TABLES, optional=("server", "train", "warmup"))
    if "warmup" not in raw:
        raise ConfigError(
            f'{config.name}: missing table warmup; add [warmup] with demonstrations = "agent.py:demonstration"'
        )
    table = dict(raw["warmup"])
    demonstrate = load_agent(_function(config, table.pop("demonstrations", ""), "warmup.demonstrations"))
    known = {f.name for f in fields(WarmupConfig)}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{config.name}: warmup.{unknown[0]}: unknown setting; known: {sorted(known)}")
    try:
        warmup = WarmupConfig(**table)
    except (TypeError, ConfigError) as exc:
        raise ConfigError(f"{config.name}: warmup: {exc}") from None
    train_tasks, heldout = load_tasks(_path(config, raw["agent"].get("tasks"), "agent.tasks"))
    try:
        pairs, validation = demonstrations(train_tasks, demonstrate), demonstrations(heldout, demonstrate)
    except ConfigError as exc:
        raise ConfigError(f"{config.name}: warmup.demonstrations: {exc}") from None
    return {"model": model_table(config, raw["model"]), "pairs": pairs, "validation": validation,
            "warmup": warmup}  # fmt: skip


def run_warmup(config: Path, out: Path) -> dict[str, Any]:
    from resonance_os.traces.warmup import warm_up

    spec = load_warmup(config)
    policy = build_policy(*spec["model"])
    out.mkdir(parents=True, exist_ok=True)
    summary = warm_up(policy, spec["pairs"], spec["warmup"], out, spec["validation"], log=typer.echo)
    (out / "warmup.json").write_text(json.dumps(summary, indent=1))
    return summary


def run_training(config: Path, out: Path, no_air: bool = False, init: Path | None = None) -> dict[str, Any]:
    from dataclasses import replace

    from resonance_os.traces.runner import RunnerPool
    from resonance_os.traces.store_client import StoreClient
    from resonance_os.traces.trainer import AgentTrainer
    from resonance_os.traces.warmup import start_from

    spec = load_spec(config)
    if init is not None and not init.is_dir():
        raise ConfigError(
            f"--init {init}: no checkpoint folder there; pass the checkpoint resonance agents warmup wrote "
            "(its OUT/checkpoint)"
        )
    if no_air:
        cfg = spec["train"]
        spec["train"] = replace(
            cfg,
            air_tool_error_reward=None,
            adapter=f"{cfg.adapter}-no-air",
            run_name=f"{cfg.run_name}-no-air",
        )
    client = StoreClient(spec["url"], spec["key"])
    try:
        client.runs_folder()  # the server answers and the key is good, before the model loads
        policy = build_policy(*spec["model"])
        if init is not None:
            start_from(policy, init)
        out.mkdir(parents=True, exist_ok=True)
        with RunnerPool(spec["url"], spec["function"], spec["key"], spec["runners"], out / "runners"):
            trainer = AgentTrainer(client, policy, spec["tasks"], spec["train"], log=typer.echo)
            summary = trainer.train(spec["heldout"])
        summary["metrics"] = str(trainer.metrics_file)
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        return summary
    finally:
        client.close()


@app.command("train")
def train(
    config: Path = typer.Argument(
        ..., help="TOML file with the tables server, model, agent and (optional) train."
    ),
    out: Path = typer.Option(
        Path("runs/agent"), "--out", help="Folder for summary.json and the runners' logs."
    ),
    no_air: bool = typer.Option(
        False,
        "--no-air",
        help="Train without AIR (tool errors give no reward), as adapter and run '<name>-no-air'.",
    ),
    init: Path | None = typer.Option(
        None,
        "--init",
        help="Start the adapter from this checkpoint (resonance agents warmup's DIR/checkpoint).",
    ),
) -> None:
    """Queue tasks, let runner processes run the agent through the recorded endpoint, train the LoRA
    adapter from the spans (GRPO across each task's rollouts), serve each new version; held-out reward
    before and after."""
    summary = run_reporting_user_errors(lambda: run_training(config, out, no_air, init))
    before, after = summary["before"], summary["after"]
    if before is not None:
        typer.echo(
            f"held-out reward: {before['mean_reward']:.3f} (version {before['version']}) -> "
            f"{after['mean_reward']:.3f} (version {after['version']}) over {before['tasks']} tasks"
        )
    typer.echo(
        f"summary in {out / 'summary.json'}, per-step metrics (with trained span ids) in {summary['metrics']}"
    )


@app.command("warmup")
def warmup(
    config: Path = typer.Argument(..., help="The training TOML, with a [warmup] table."),
    out: Path = typer.Option(
        Path("runs/agent-warmup"), "--out", help="Folder for checkpoint/, metrics.jsonl and warmup.json."
    ),
) -> None:
    """Supervised warm-up before RL: fine-tune the LoRA adapter on each training task's demonstration
    (the agent's first call answered as it should be); no server needed. Then: resonance agents train
    CONFIG --init OUT/checkpoint."""
    summary = run_reporting_user_errors(lambda: run_warmup(config, out))
    typer.echo(f"next: resonance agents train {config} --init {summary['checkpoint']}")
