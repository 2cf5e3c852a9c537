"""The agent trainer loop end to end on a live server with the tiny model: tasks queued in the store,
runner processes answering through the recorded endpoint with the official ``openai`` SDK and the
OpenTelemetry exporter, spans stored, transitions built, the LoRA adapter updated and republished under
the same name, and the served model's answers changing; the policy-lag bound dropping or down-weighting
rollouts sampled from an older version."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import httpx
import pytest

pytest.importorskip("openai")
pytest.importorskip("peft", reason="LoRA adapters need the local extra")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "llm"))
from live_store import LiveServer  # noqa: E402
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.api.persistence.db import Database  # noqa: E402
from resonance_os.api.persistence.tenants import create_tenant  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.rl.run import list_runs, open_run  # noqa: E402
from resonance_os.traces.runner import RunnerPool, load_agent, run_one  # noqa: E402
from resonance_os.traces.store_client import StoreClient  # noqa: E402
from resonance_os.traces.trainer import AgentTrainConfig, AgentTrainer  # noqa: E402
from resonance_os.traces.update import UpdateConfig  # noqa: E402

MODEL = "tiny"
AGENT = f"{Path(__file__).with_name('loop_agent.py')}:run"
TASKS = [{"id": "t1", "question": "the cat sat"}, {"id": "t2", "question": "on the mat", "tool_fails": True}]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trainer")
    tokenizer = make_tokenizer()
    make_model(len(tokenizer), context=256).save_pretrained(tmp / MODEL)
    tokenizer.save_pretrained(tmp / MODEL)
    env = {
        "RESONANCE_HOME": str(tmp / "home"),
        "RESONANCE_OPENAI_MODEL": str(tmp / MODEL),
        "RESONANCE_OPENAI_RUNS": str(tmp / "runs"),
    }
    server = LiveServer(f"sqlite:///{tmp / 'service.db'}", env=env).start(timeout=180.0)
    server.home, server.model = tmp / "home", tmp / MODEL
    yield server
    server.stop()
    assert "Traceback" not in server.output()


@pytest.fixture
def client(served, monkeypatch):
    monkeypatch.setenv("RESONANCE_HOME", str(served.home))
    db = Database(served.db_url)
    key = create_tenant(db, f"trainer-{uuid.uuid4().hex[:8]}")
    db.dispose()
    store = StoreClient(served.url, key)
    yield store
    store.close()


def _trainer(served, client, **overrides) -> AgentTrainer:
    policy = LMPolicy.from_pretrained(served.model, PolicyConfig(lora_rank=4, lora_alpha=8))
    config = AgentTrainConfig(
        adapter="agent", run_name=f"run-{uuid.uuid4().hex[:6]}", tasks_per_step=2, group_size=2,
        max_tokens=6, wait_timeout_s=120, update=UpdateConfig(learning_rate=0.05), **overrides,
    )  # fmt: skip
    return AgentTrainer(client, policy, TASKS, config, log=lambda _: None)


def _served_logprobs(served, client) -> list[float]:
    reply = httpx.post(
        f"{served.url}/v1/chat/completions", headers={"Authorization": f"Bearer {client.api_key}"}, timeout=60,
        json={"model": "agent", "messages": [{"role": "user", "content": "the cat"}], "max_tokens": 4,
              "temperature": 0, "logprobs": True},
    ).json()  # fmt: skip
    return [entry["logprob"] for entry in reply["choices"][0]["logprobs"]["content"]]


def test_one_iteration_end_to_end_changes_the_served_model(served, client, tmp_path):
    trainer = _trainer(served, client, steps=1, air_tool_error_reward=-0.5)
    with RunnerPool(served.url, AGENT, client.api_key, 2, tmp_path / "runners"):
        trainer.publish()
        start, before = trainer.version, _served_logprobs(served, client)
        metrics = trainer.step(0)
    after = _served_logprobs(served, client)

    assert metrics["rollouts"] == 4 and metrics["failed_rollouts"] == 0 and metrics["carried_over"] == 0
    assert metrics["transitions"] == 8  # two calls per rollout, each a recorded span
    assert metrics["tool_errors"] == 2  # the failing tool of t2's two rollouts, under AIR
    assert metrics["published_version"] == trainer.version == start + 1
    assert after != pytest.approx(before, abs=1e-6)

    logged = [json.loads(line) for line in trainer.metrics_file.read_text().splitlines()]
    samples = logged[-1]["trained_spans"]
    assert len(samples) == 8 and {s["version"] for s in samples} == {start}
    for rollout_id in {s["rollout_id"] for s in samples}:
        stored = {s.span_id for s in client.spans(rollout_id, "latest")}
        assert {s["span_id"] for s in samples if s["rollout_id"] == rollout_id} <= stored
    published = trainer.run_folder / f"v{trainer.version:04d}" / "weights" / "adapter.safetensors"
    assert published.is_file()

    # the run is an rl.run run like every trainer's: the loader and the listing find it
    run = open_run(trainer.run_folder)
    assert (run.kind, run.layout, run.config["run_name"]) == ("agent", "run", trainer.config.run_name)
    assert run.config["update"]["learning_rate"] == 0.05 and run.task == {"tasks": TASKS}
    assert (run.checkpoint / "weights" / "adapter.safetensors").read_bytes() == published.read_bytes()
    assert run.metrics() == logged
    assert trainer.run_folder in [r.path for r in list_runs(trainer.run_folder.parent)]


@pytest.mark.parametrize("lag_policy", ["drop", "downweight"])
def test_rollouts_older_than_the_lag_bound_are_dropped_or_downweighted(served, client, lag_policy):
    trainer = _trainer(served, client, max_policy_lag=1, lag_policy=lag_policy, lag_decay=0.5)
    agent = load_agent(AGENT)
    trainer.publish()
    sampled_at = trainer.version
    ids = trainer.enqueue(TASKS[:1], 2, 1.0, "train")
    for _ in ids:
        run_one(client, agent, client.dequeue("test-worker"))
    trainer.publish()
    trainer.publish()  # two versions newer than the one that answered: lag 2 > 1
    finished, failed = trainer.collect(ids, 60)
    assert failed == 0 and [r.version for r in finished] == [sampled_at, sampled_at]

    metrics = trainer.update(finished)
    assert metrics["stale_rollouts"] == 2 and metrics["max_lag"] == 2
    if lag_policy == "drop":
        assert metrics["dropped_stale"] == 2 and metrics["transitions"] == 0 and "loss" not in metrics
    else:
        assert metrics["downweighted_stale"] == 2 and metrics["transitions"] == 4
        assert {s["weight"] for s in metrics["trained_spans"]} == {0.5}


def test_the_sql_example_agent_runs_unmodified_and_air_penalises_its_failed_queries(
    served, client, tmp_path, monkeypatch
):
    example = Path(__file__).resolve().parents[3] / "examples" / "sql_agent"
    sys.path.insert(0, str(example))
    from build_db import build

    db, task_file = build(tmp_path)
    monkeypatch.setenv("SQL_AGENT_DB", str(db))
    agent_module = f"{example / 'agent.py'}:run"
    agent = load_agent(agent_module)
    tasks = json.loads(task_file.read_text())
    tool = sys.modules[agent.__module__]
    tracer = tool.TracerProvider().get_tracer("check")
    assert all(tool.matches(tool.run_sql(t["sql"], tracer)[0][0], t["answer"]) for t in tasks)  # gold SQL

    trainer = _trainer(served, client)
    trainer.publish()
    ids = trainer.enqueue([t for t in tasks if t["split"] == "heldout"][:1], 1, 1.0, "train")
    run_one(client, agent, client.dequeue("sql-worker"))
    [rollout], failed = trainer.collect(ids, 60)
    tool_spans = [s for s in client.spans(ids[0], "latest") if s.name == "execute_tool run_sql"]
    # the tiny random model writes no SQL: three queries, each a failed tool call, each penalised by AIR
    assert failed == 0 and rollout.reward == 0.0 and len(rollout.transitions) == 3
    assert len(tool_spans) == 3 and all(s.is_error for s in tool_spans)
    assert [t.air_reward for t in rollout.transitions] == [-0.5, -0.5, -0.5]
