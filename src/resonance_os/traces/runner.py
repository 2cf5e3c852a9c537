"""An agent runner: a loop that takes rollouts from the store, runs an agent function on each, records
its reward and ends the attempt. Any number of them serve one trainer (local processes here:
:class:`RunnerPool`).

The agent is ``run(task, llm) -> float | None``, found by ``"package.module:function"`` or
``"path/to/file.py:function"``. ``llm`` holds what it needs to reach the policy and the store:
``base_url`` (the recorded OpenAI endpoint of this rollout's attempt, so every call is a span with its
token ids), ``model``, ``api_key``, ``sampling`` (the trainer's sampling parameters), ``rollout_id``,
``attempt_id``, and ``otlp_endpoint`` / ``otlp_headers`` for spans of its own (tool calls). The returned
reward is stored as Agent Lightning's reward span (``agentlightning.annotation``), as its runner does
with an agent's return value; an exception fails the attempt (the store retries it per the rollout's
config).

``python -m resonance_os.traces.runner URL AGENT --key KEY --worker-id ID``
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resonance_os.traces.rewards import ANNOTATION_SPAN
from resonance_os.traces.spans import new_span_record
from resonance_os.traces.store_client import StoreClient

log = logging.getLogger(__name__)
AgentFn = Callable[[Any, dict[str, Any]], "float | None"]
IDLE_POLL_S = 0.5


def load_agent(spec: str) -> AgentFn:
    """``module:function`` or ``file.py:function`` -> the function; ``ValueError`` naming what is wrong."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise ValueError(f"agent {spec!r}: give 'module:function' or 'path/to/agent.py:function'")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"agent {spec!r}: no file {path}")
        module_spec = importlib.util.spec_from_file_location(f"agent_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    agent = getattr(module, name, None)
    if not callable(agent):
        raise ValueError(f"agent {spec!r}: {where} has no function {name!r}")
    return agent


def reward_span(rollout_id: str, attempt_id: str, reward: float) -> dict[str, Any]:
    """``agl.emit_reward(reward)`` as the store keeps it."""
    now = time.time()
    attributes = {"agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": float(reward)}
    return new_span_record(rollout_id, attempt_id, ANNOTATION_SPAN, attributes, now, now)


def llm_handle(client: StoreClient, rollout: dict[str, Any], resources: dict[str, Any]) -> dict[str, Any]:
    rid, aid = rollout["rollout_id"], rollout["attempt"]["attempt_id"]
    llm = next((r for r in resources.values() if r.get("resource_type") == "llm"), None)
    if llm is None:
        raise ValueError(f"rollout {rid}'s resources name no llm resource")
    headers = {"Authorization": f"Bearer {client.api_key}"} if client.api_key else {}
    return {
        "base_url": f"{client.url}/rollout/{rid}/attempt/{aid}/v1",
        "model": llm["model"],
        "api_key": client.api_key or "unused",
        "sampling": dict(llm.get("sampling_parameters") or {}),
        "rollout_id": rid,
        "attempt_id": aid,
        "otlp_endpoint": f"{client.url}/v1/traces",
        "otlp_headers": headers,
    }


def run_one(client: StoreClient, agent: AgentFn, rollout: dict[str, Any]) -> None:
    rid, aid = rollout["rollout_id"], rollout["attempt"]["attempt_id"]
    try:
        resources = client.get_resources(rollout["resources_id"])
        reward = agent(rollout["input"], llm_handle(client, rollout, resources))
        if reward is not None:
            client.add_span(reward_span(rid, aid, float(reward)))
    except Exception as exc:  # the agent's failure fails this attempt, not the runner
        log.warning("rollout %s attempt %s failed: %s", rid, aid, exc)
        client.update_attempt(rid, aid, status="failed", metadata={"error": traceback.format_exc()[-2000:]})
        return
    client.update_attempt(rid, aid, status="succeeded")


def serve(url: str, agent_spec: str, api_key: str | None, worker_id: str) -> None:
    """Run rollouts until SIGTERM (the current one is finished first; a second SIGTERM stops at once)."""
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        if stopping:
            raise SystemExit(143)
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    agent = load_agent(agent_spec)
    client = StoreClient(url, api_key)
    while not stopping:
        rollout = client.dequeue(worker_id)
        if rollout is None:
            time.sleep(IDLE_POLL_S)
            continue
        run_one(client, agent, rollout)


class RunnerPool:
    """``count`` runner processes on this machine (``python -m resonance_os.traces.runner``)."""

    def __init__(self, url: str, agent_spec: str, api_key: str | None, count: int, log_dir: Path) -> None:
        load_agent(agent_spec)  # a wrong spec fails here, not in every process
        self.processes: list[subprocess.Popen] = []
        log_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "RESONANCE_RUNNER_KEY": api_key or ""}
        for i in range(count):
            out = open(log_dir / f"runner-{i}.log", "ab")
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "resonance_os.traces.runner",
                        url,
                        agent_spec,
                        "--worker-id",
                        f"runner-{i}",
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            )
            out.close()

    def alive(self) -> int:
        return sum(p.poll() is None for p in self.processes)

    def close(self, timeout: float = 30.0) -> None:
        """SIGTERM each runner (it finishes its rollout), SIGKILL what is left after ``timeout``."""
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> RunnerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run an agent on the rollouts of a resonance store.")
    parser.add_argument("url", help="the server URL (http://host:8000) or a store URL")
    parser.add_argument("agent", help="module:function or path/to/agent.py:function")
    parser.add_argument("--worker-id", default=f"runner-{os.getpid()}")
    parser.add_argument(
        "--key", default=None, help="API key (default: $RESONANCE_RUNNER_KEY; none for a store URL)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    serve(args.url, args.agent, args.key or os.environ.get("RESONANCE_RUNNER_KEY") or None, args.worker_id)


if __name__ == "__main__":
    main()
