"""The agent trainer: tasks queued in the store, rollouts run by any number of runners through the
recorded OpenAI endpoint, each finished rollout's spans turned into transitions, GRPO advantages across
the rollouts of one task, one :class:`~resonance_os.traces.update.TransitionUpdater` step on the LoRA
adapter, and the new adapter published to the endpoint the agents call, under the same name.

Policy lag: every published adapter has a version (the server's, raised by each replace). A call's
version is the ``resonance.adapter.version`` its recorded span carries (else the version the rollout was
queued under); a rollout's is its oldest call's. A rollout finished more than ``max_policy_lag`` versions
behind the policy being trained is dropped (``lag_policy="drop"``) or its advantages scaled by
``lag_decay ** (lag - max_policy_lag)`` (``"downweight"``); both are counted in each step's metrics.
Rollouts that did not finish within a step's wait are carried to the next step, where they arrive late.

The run folder (``runs_folder/run_name``) is an ``rl.run`` run of kind ``"agent"`` (``open_run`` and
``list_runs`` find it): ``config.json`` (the :class:`AgentTrainConfig`), ``task.json`` (the training
tasks), ``checkpoint/`` (the latest published adapter, replaced atomically) and ``metrics.jsonl``; beside
them ``vNNNN/``, every published version, which the endpoint serves. Every step appends one JSON line
to ``metrics.jsonl``, naming for each trained sample the stored span it came from (``trained_spans``:
``span_id``, ``rollout_id``, ``attempt_id``, advantage, weight).
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from resonance_os.llm.policy import LMPolicy
from resonance_os.rl.errors import ConfigError
from resonance_os.rl.run import Run
from resonance_os.traces.advantages import RolloutReturns, task_advantages
from resonance_os.traces.air import AirConfig
from resonance_os.traces.credit import assign_credit, final_reward
from resonance_os.traces.store_client import StoreClient
from resonance_os.traces.transitions import Transition, TransitionConfig, spans_to_transitions
from resonance_os.traces.update import TransitionUpdater, UpdateConfig

KIND = "agent"
"""The ``rl.run`` kind of an agent trainer's run."""
VERSION_ATTRIBUTE = "resonance.adapter.version"
LLM_CALLS = r"openai\.(chat\.)?completion"


@dataclass(frozen=True)
class AgentTrainConfig:
    """How the loop runs (``resonance agents train``'s [train] table)."""

    adapter: str = "agent"
    run_name: str = "agent-run"
    steps: int = 4
    tasks_per_step: int = 4
    group_size: int = 4
    max_policy_lag: int = 1
    lag_policy: Literal["drop", "downweight"] = "drop"
    lag_decay: float = 0.5
    wait_timeout_s: float = 900.0
    credit: Literal["identical", "discounted"] = "identical"
    gamma: float = 1.0
    air_tool_error_reward: float | None = -0.5
    temperature: float = 1.0
    max_tokens: int = 128
    rollout_timeout_s: float = 600.0
    max_attempts: int = 2
    seed: int = 0
    update: UpdateConfig = field(default_factory=UpdateConfig)

    def __post_init__(self) -> None:
        checks = {
            "steps": self.steps >= 0,
            "tasks_per_step": self.tasks_per_step >= 1,
            "group_size": self.group_size >= 2,
            "max_policy_lag": self.max_policy_lag >= 0,
            "lag_policy": self.lag_policy in ("drop", "downweight"),
            "lag_decay": 0.0 <= self.lag_decay <= 1.0,
            "credit": self.credit in ("identical", "discounted"),
            "max_attempts": self.max_attempts >= 1,
        }
        wrong = [name for name, ok in checks.items() if not ok]
        if wrong:
            raise ConfigError(
                f"{wrong[0]}={getattr(self, wrong[0])!r} is out of range: steps >= 0, tasks_per_step >= 1, "
                "group_size >= 2 (GRPO compares rollouts of one task), max_policy_lag >= 0, lag_policy 'drop' "
                "or 'downweight', lag_decay in [0, 1], credit 'identical' or 'discounted', max_attempts >= 1"
            )


@dataclass
class FinishedRollout:
    rollout_id: str
    attempt_id: str
    task: str
    version: int
    transitions: list[Transition]
    reward: float | None


def rollout_version(transitions: Sequence[Transition], queued_version: int) -> int:
    """The oldest policy version that answered any call of the rollout."""
    versions = [t.metadata.get("version") for t in transitions]
    known = [v for v in versions if isinstance(v, int)]
    return min(known) if known else queued_version


class AgentTrainer:
    """The loop over a running ``resonance serve`` (``client``) and runners that take its rollouts."""

    def __init__(
        self,
        client: StoreClient,
        policy: LMPolicy,
        tasks: Sequence[dict[str, Any]],
        config: AgentTrainConfig,
        log: Callable[[str], None] = print,
    ) -> None:
        if not tasks:
            raise ConfigError("no training tasks; give at least one")
        self.client, self.policy, self.tasks, self.config, self.log = client, policy, list(tasks), config, log
        self.updater = TransitionUpdater(policy, config.update)
        self.transition_config = TransitionConfig(llm_call_match=LLM_CALLS)
        self.air = (
            AirConfig(tool_error_reward=config.air_tool_error_reward)
            if config.air_tool_error_reward is not None
            else None
        )
        # training again under the same name trains into the same run (its metrics log is appended to)
        self.run = Run.create(
            Path(client.runs_folder()) / config.run_name,
            KIND,
            config=asdict(config),
            task={"tasks": self.tasks},
            overwrite=True,
        )
        self.run_folder, self.metrics_file = self.run.path, self.run.metrics_path
        self.version = 0
        self.pending: dict[str, int] = {}  # rollout id -> version it was queued under

    # ------------------------------------------------------------------ publishing
    def publish(self) -> int:
        """Save the adapter as the next version folder, serve it as ``config.adapter``, and make it the
        run's checkpoint."""
        folder = f"{self.config.run_name}/v{self.version + 1:04d}"
        saved = self.run_folder.parent / folder
        self.policy.save(saved, metadata={"adapter": self.config.adapter})
        self.version = self.client.publish(self.config.adapter, folder)
        self.run.save_checkpoint(lambda checkpoint: shutil.copytree(saved, checkpoint))
        return self.version

    def resources(self, temperature: float) -> str:
        return self.client.add_resources(
            {
                "main_llm": {
                    "resource_type": "llm",
                    "endpoint": f"{self.client.url}/v1",
                    "model": self.config.adapter,
                    "sampling_parameters": {"temperature": temperature, "max_tokens": self.config.max_tokens},
                }
            }
        )

    # ------------------------------------------------------------------ rollouts
    def enqueue(
        self, tasks: Sequence[dict[str, Any]], copies: int, temperature: float, mode: str
    ) -> list[str]:
        resources_id = self.resources(temperature)
        config = {
            "timeout_seconds": self.config.rollout_timeout_s,
            "max_attempts": self.config.max_attempts,
            "retry_condition": ["failed", "timeout", "unresponsive"],
        }
        requests = [
            {
                "input": task,
                "mode": mode,
                "resources_id": resources_id,
                "config": config,
                "metadata": {"task_id": task_key(task), "policy_version": self.version},
            }
            for task in tasks
            for _ in range(copies)
        ]
        ids = [r["rollout_id"] for r in self.client.enqueue(requests)]
        for rid in ids:
            self.pending[rid] = self.version
        return ids

    def collect(self, rollout_ids: Sequence[str], timeout: float) -> tuple[list[FinishedRollout], int]:
        """The succeeded rollouts among ``rollout_ids`` finished within ``timeout`` and their transitions,
        and how many failed; unfinished ones stay pending."""
        done = self.client.wait(list(rollout_ids), timeout)
        finished, failed = [], 0
        for rollout in done:
            queued = self.pending.pop(rollout["rollout_id"], self.version)
            if rollout["status"] != "succeeded":
                failed += 1
                continue
            spans = self.client.spans(rollout["rollout_id"], "latest")  # the attempt that succeeded
            transitions = spans_to_transitions(spans, self.transition_config, self.air)
            by_id = {s.span_id: s for s in spans}
            for t in transitions:
                version = by_id[t.span_id].attributes.get(VERSION_ATTRIBUTE)
                t.metadata["version"] = version if isinstance(version, int) else None
            finished.append(
                FinishedRollout(
                    rollout["rollout_id"],
                    spans[0].attempt_id if spans else "",
                    task_key(rollout["input"]),
                    rollout_version(transitions, queued),
                    transitions,
                    final_reward(transitions),
                )
            )
        return finished, failed

    # ------------------------------------------------------------------ one update
    def update(self, finished: Sequence[FinishedRollout]) -> dict[str, Any]:
        """Policy-lag bound, credit, GRPO advantages by task, one step; what happened, as metrics."""
        cfg = self.config
        kept, weights, stale = [], [], 0
        for rollout in finished:
            lag = self.version - rollout.version
            if lag > cfg.max_policy_lag:
                stale += 1
                if cfg.lag_policy == "drop":
                    continue
                weights.append(cfg.lag_decay ** (lag - cfg.max_policy_lag))
            else:
                weights.append(1.0)
            kept.append(rollout)
        returns = [assign_credit(r.transitions, cfg.credit, cfg.gamma) for r in kept]
        advantages = task_advantages([RolloutReturns(r.task, ret) for r, ret in zip(kept, returns)])
        samples, lineage = [], []
        for rollout, weight, advs in zip(kept, weights, advantages):
            for transition, advantage in zip(rollout.transitions, advs):
                samples.append((transition, advantage * weight))
                lineage.append(
                    {"span_id": transition.span_id, "rollout_id": transition.rollout_id,
                     "attempt_id": transition.attempt_id, "advantage": advantage, "weight": weight,
                     "version": rollout.version}
                )  # fmt: skip
        metrics: dict[str, Any] = {
            "rollouts": len(finished),
            "stale_rollouts": stale,
            "dropped_stale": stale if cfg.lag_policy == "drop" else 0,
            "downweighted_stale": stale if cfg.lag_policy == "downweight" else 0,
            "max_lag": max((self.version - r.version for r in finished), default=0),
            "transitions": len(samples),
            "tool_errors": sum(t.air_reward != 0.0 for r in kept for t in r.transitions),
            "mean_reward": statistics.fmean([r.reward or 0.0 for r in finished]) if finished else None,
            "trained_spans": lineage,
        }
        trainable = [(t, a) for t, a in samples if t.prompt_token_ids and t.response_token_ids and a != 0.0]
        if not trainable:
            metrics["skipped"] = (
                "no sample with a non-zero advantage (every rollout of each task scored alike)"
            )
            return metrics
        metrics.update(self.updater.step(trainable))
        return metrics

    # ------------------------------------------------------------------ the loop
    def evaluate(self, tasks: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Held-out reward of the served policy: each task once, greedy (temperature 0)."""
        ids = self.enqueue(tasks, 1, 0.0, "val")
        finished, failed = self.collect(ids, self.config.wait_timeout_s)
        for rid in ids:
            self.pending.pop(rid, None)
        rewards = [r.reward or 0.0 for r in finished] + [0.0] * (len(tasks) - len(finished))
        return {"version": self.version, "tasks": len(tasks), "finished": len(finished), "failed": failed,
                "mean_reward": statistics.fmean(rewards) if rewards else 0.0}  # fmt: skip

    def step(self, index: int) -> dict[str, Any]:
        start = time.monotonic()
        first = (index * self.config.tasks_per_step) % len(self.tasks)
        batch = [self.tasks[(first + i) % len(self.tasks)] for i in range(self.config.tasks_per_step)]
        self.enqueue(batch, self.config.group_size, self.config.temperature, "train")
        finished, failed = self.collect(list(self.pending), self.config.wait_timeout_s)
        metrics = {"step": index, "policy_version": self.version, "failed_rollouts": failed,
                   "carried_over": len(self.pending), **self.update(finished)}  # fmt: skip
        if "loss" in metrics:
            metrics["published_version"] = self.publish()
        metrics["seconds"] = round(time.monotonic() - start, 1)
        self.record(metrics)
        return metrics

    def record(self, metrics: dict[str, Any]) -> None:
        with self.metrics_file.open("a") as out:
            out.write(json.dumps(metrics) + "\n")
        shown = {k: v for k, v in metrics.items() if k != "trained_spans"}
        self.log(json.dumps(shown))

    def train(self, heldout: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        """Publish the starting adapter, evaluate, run ``config.steps`` steps, evaluate again."""
        self.publish()
        self.record({"config": {**asdict(self.config)}, "start_version": self.version})
        summary: dict[str, Any] = {"before": self.evaluate(heldout) if heldout else None, "steps": []}
        if heldout:
            self.record({"heldout_before": summary["before"]})
        for index in range(self.config.steps):
            summary["steps"].append({k: v for k, v in self.step(index).items() if k != "trained_spans"})
        summary["after"] = self.evaluate(heldout) if heldout else None
        if heldout:
            self.record({"heldout_after": summary["after"]})
        return summary


def task_key(task: Any) -> str:
    """The GRPO group of a task: its ``id`` when it has one, else its JSON."""
    if isinstance(task, dict) and "id" in task:
        return str(task["id"])
    return json.dumps(task, sort_keys=True)
