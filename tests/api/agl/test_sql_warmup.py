"""The supervised warm-up before RL from traces (``resonance agents warmup``), with the tiny model: it
fine-tunes the adapter on the SQL example agent's demonstrations (its first call answered with the gold
SQL) and lowers their loss; ``start_from`` (``resonance agents train --init``) loads exactly those
weights; bad settings are one line and exit code 2; and the warm-up trains on the very prompt tokens the
recorded endpoint stores for the agent's first call (a live server)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("openai")
pytest.importorskip("peft", reason="LoRA adapters need the local extra")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from live_store import LiveServer  # noqa: E402
from tiny_lm import save_tiny_model  # noqa: E402

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402
from resonance_os.cli.hr_main import app  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.sft import SFT  # noqa: E402
from resonance_os.traces.runner import load_agent, run_one  # noqa: E402
from resonance_os.traces.store_client import StoreClient  # noqa: E402
from resonance_os.traces.trainer import AgentTrainConfig, AgentTrainer  # noqa: E402
from resonance_os.traces.warmup import demonstrations, start_from  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sql_agent"
LORA = PolicyConfig(lora_rank=4, lora_alpha=8)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The tiny model, the SQL example's database and tasks, and a TOML with a [warmup] table."""
    tmp = tmp_path_factory.mktemp("sql-warmup")
    save_tiny_model(tmp / "tiny", context=256)
    sys.path.insert(0, str(EXAMPLE))
    from build_db import build

    db, tasks = build(tmp)
    return tmp, db, tasks


def _toml(tmp: Path, tasks: Path, warmup: str) -> Path:
    config = tmp / f"train-{uuid.uuid4().hex[:6]}.toml"
    config.write_text(
        f'[server]\nurl = "http://127.0.0.1:9"\n\n[model]\npath = "{tmp / "tiny"}"\nlora_rank = 4\nlora_alpha = 8\n\n'
        f'[agent]\nfunction = "{EXAMPLE / "agent.py"}:run"\ntasks = "{tasks}"\n\n[warmup]\n{warmup}\n'
    )
    return config


def test_warmup_lowers_the_demonstration_loss_and_train_init_loads_its_weights(example):
    tmp, _, tasks = example
    config = _toml(
        tmp,
        tasks,
        f'demonstrations = "{EXAMPLE / "agent.py"}:demonstration"\nsteps = 12\nbatch_size = 8\nlearning_rate = 1e-2',
    )
    result = CliRunner().invoke(app, ["agents", "warmup", str(config), "--out", str(tmp / "warm")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp / "warm" / "warmup.json").read_text())
    assert summary["demonstrations"] == 56 and summary["validation"] == 18 and summary["steps"] == 12
    assert summary["loss_after"]["train"] < 0.5 * summary["loss_before"]["train"]
    assert summary["loss_after"]["validation"] < summary["loss_before"]["validation"]
    assert f"--init {tmp / 'warm' / 'checkpoint'}" in result.output

    # a fresh policy started from the checkpoint (what `agents train --init` does) scores the
    # demonstrations exactly as the warmed-up one did, and unlike the base model
    train = [t for t in json.loads(tasks.read_text()) if t["split"] == "train"]
    pairs = demonstrations(train, load_agent(f"{EXAMPLE / 'agent.py'}:demonstration"))
    fresh = LMPolicy.from_pretrained(tmp / "tiny", LORA)
    base_loss = SFT(fresh, pairs, seed=0).evaluate()
    start_from(fresh, Path(summary["checkpoint"]))
    assert SFT(fresh, pairs, seed=0).evaluate() == pytest.approx(summary["loss_after"]["train"], rel=1e-4)
    assert base_loss == pytest.approx(summary["loss_before"]["train"], rel=1e-4)


@pytest.mark.parametrize(
    ("warmup", "message"),
    [
        (None, "missing table warmup"),
        ('demonstrations = "agent.py:nothing"', "warmup.demonstrations"),
        ('demonstrations = "AGENT:demonstration"\nsteps = 0', "steps=0 must be an integer >= 1"),
        ('demonstrations = "AGENT:demonstration"\nepochs = 3', "warmup.epochs: unknown setting"),
        ('demonstrations = "AGENT:run"', "the demonstration of task 'customer-Ana-0'"),
    ],
)
def test_bad_warmup_settings_are_one_line_and_exit_2(example, warmup, message):
    tmp, _, tasks = example
    config = _toml(tmp, tasks, (warmup or "").replace("AGENT", str(EXAMPLE / "agent.py")))
    if warmup is None:
        config.write_text(config.read_text().replace("[warmup]\n", ""))
    result = CliRunner().invoke(app, ["agents", "warmup", str(config), "--out", str(tmp / "bad")])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not (tmp / "bad" / "checkpoint").exists()


def test_train_init_without_a_checkpoint_says_so_before_any_work(example, tmp_path, monkeypatch):
    tmp, _, tasks = example
    config = _toml(tmp, tasks, "")
    monkeypatch.setenv("RESONANCE_API_KEY", "rsk_unused")
    result = CliRunner().invoke(
        app, ["agents", "train", str(config), "--out", str(tmp_path), "--init", str(tmp_path / "none")]
    )
    assert result.exit_code == 2 and "--init" in result.output and "agents warmup" in result.output


def test_the_warmup_trains_on_the_prompt_tokens_the_endpoint_records(example, monkeypatch):
    tmp, db, tasks = example
    env = {"RESONANCE_HOME": str(tmp / "home"), "RESONANCE_OPENAI_MODEL": str(tmp / "tiny"),
           "RESONANCE_OPENAI_RUNS": str(tmp / "runs")}  # fmt: skip
    server = LiveServer(f"sqlite:///{tmp / 'service.db'}", env=env).start(timeout=180.0)
    monkeypatch.setenv("RESONANCE_HOME", str(tmp / "home"))
    monkeypatch.setenv("SQL_AGENT_DB", str(db))
    database = Database(server.db_url)
    client = StoreClient(server.url, create_tenant(database, "sql-warmup"))
    database.dispose()
    try:
        task = next(t for t in json.loads(tasks.read_text()) if t["split"] == "train")
        policy = LMPolicy.from_pretrained(tmp / "tiny", LORA)
        config = AgentTrainConfig(
            adapter="warm", run_name="warm", tasks_per_step=1, group_size=2, max_tokens=4
        )
        trainer = AgentTrainer(client, policy, [task], config, log=lambda _: None)
        trainer.publish()
        ids = trainer.enqueue([task], 1, 1.0, "train")
        run_one(client, load_agent(f"{EXAMPLE / 'agent.py'}:run"), client.dequeue("warmup-check"))
        [rollout], failed = trainer.collect(ids, 60)
    finally:
        client.close()
        server.stop()
    [pair] = demonstrations([task], load_agent(f"{EXAMPLE / 'agent.py'}:demonstration"))
    recorded = rollout.transitions[0].prompt_token_ids  # the agent's first call, as the endpoint stored it
    assert failed == 0 and recorded and policy.encode_prompts([pair["prompt"]])[0] == recorded
    assert "Traceback" not in server.output()
