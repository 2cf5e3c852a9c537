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

Relative paths are read from the TOML's folder. A mistake is one line naming the table and field,
exit code 2.
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

TABLES = ("server", "model", "agent", "train")
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


def load_spec(config: Path) -> dict[str, Any]:
    """Everything the run needs from the TOML, checked before any model loads."""
    from resonance_os.traces.runner import load_agent
    from resonance_os.traces.trainer import AgentTrainConfig
    from resonance_os.traces.update import UpdateConfig

    raw = read_toml(config, TABLES, optional=("train",))
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
    function = agent.get("function", "")
    where, _, name = str(function).rpartition(":")
    if where.endswith(".py") and not Path(where).is_absolute():
        function = f"{config.resolve().parent / where}:{name}"
    try:
        load_agent(function)
    except ValueError as exc:
        raise ConfigError(f"{config.name}: agent.function: {exc}") from None
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


def run_training(config: Path, out: Path, no_air: bool = False) -> dict[str, Any]:
    from dataclasses import replace

    from resonance_os.traces.runner import RunnerPool
    from resonance_os.traces.store_client import StoreClient
    from resonance_os.traces.trainer import AgentTrainer

    spec = load_spec(config)
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
) -> None:
    """Queue tasks, let runner processes run the agent through the recorded endpoint, train the LoRA
    adapter from the spans (GRPO across each task's rollouts), serve each new version; held-out reward
    before and after."""
    summary = run_reporting_user_errors(lambda: run_training(config, out, no_air))
    before, after = summary["before"], summary["after"]
    if before is not None:
        typer.echo(
            f"held-out reward: {before['mean_reward']:.3f} (version {before['version']}) -> "
            f"{after['mean_reward']:.3f} (version {after['version']}) over {before['tasks']} tasks"
        )
    typer.echo(
        f"summary in {out / 'summary.json'}, per-step metrics (with trained span ids) in {summary['metrics']}"
    )
