"""The SQL agent (examples/sql_agent) learning on SmolLM2-135M-Instruct, side by side in one run: the
held-out success rate (every held-out question once, greedy, through the agent unmodified) of

1. the untrained policy (the zero LoRA adapter),
2. after the supervised warm-up (``traces.warmup``: SFT on the training questions' gold SQL, the
   agent's first call answered; what ``resonance agents warmup`` does),
3. after RL from traces with AIR (``AgentTrainer`` steps from the warm-up: rollouts of the training
   questions through the recorded endpoint, GRPO across each question's rollouts, tool errors -0.5),
4. after the same RL without AIR, from the same warm-up checkpoint.

It starts its own ``resonance serve`` (SQLite, one tenant, the served model SmolLM2) and ``--runners``
runner processes, and reports each phase's wall time, the training reward of each RL step, and the
CPU time of this process and of its children (server and runners).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/bench_sql_agent.py [--rl-steps 4] [--no-air-too]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "sql_agent"
AGENT = f"{EXAMPLE / 'agent.py'}:run"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(workdir: Path) -> tuple[subprocess.Popen, str, str]:
    """``resonance serve`` on a free port with its own database, runs folder and one tenant's key."""
    os.environ["RESONANCE_HOME"] = str(workdir / "home")  # the key pepper, shared with the server
    from resonance_os.api.persistence.db import Database
    from resonance_os.api.persistence.tenants import create_tenant

    db_url = f"sqlite:///{workdir / 'service.db'}"
    db = Database(db_url)
    db.migrate()
    key = create_tenant(db, "sql-bench")
    db.dispose()
    port = free_port()
    env = {**os.environ, "RESONANCE_OPENAI_RUNS": str(workdir / "runs"), "RESONANCE_RATE_LIMIT": "100000",
           "RESONANCE_RATE_BURST": "100000", "RESONANCE_TEXT_WORKERS": "0"}  # fmt: skip
    log = open(workdir / "server.log", "wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(port), "--db", db_url],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}; see {workdir / 'server.log'}")
        try:
            if (
                httpx.get(f"{url}/v1/agl/health", headers={"Authorization": f"Bearer {key}"}).status_code
                == 200
            ):
                return server, url, key
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    server.terminate()
    raise RuntimeError("the server did not answer within 300 s")


def solved(evaluation: dict) -> str:
    return f"{round(evaluation['mean_reward'] * evaluation['tasks'])}/{evaluation['tasks']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--rl-steps", type=int, default=4)
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="the RL steps' (the warm-up: 1e-3)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--runners", type=int, default=4)
    parser.add_argument("--no-air-too", action="store_true", help="also the RL without AIR (phase 4)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "sql_agent.json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server and runners on the way out

    from resonance_os.cli.llm import build_policy
    from resonance_os.llm.policy import PolicyConfig
    from resonance_os.traces.runner import RunnerPool, load_agent
    from resonance_os.traces.store_client import StoreClient
    from resonance_os.traces.trainer import AgentTrainConfig, AgentTrainer
    from resonance_os.traces.update import UpdateConfig
    from resonance_os.traces.warmup import WarmupConfig, demonstrations, start_from, warm_up

    tasks = json.loads((EXAMPLE / "tasks.json").read_text())
    train = [t for t in tasks if t["split"] == "train"]
    heldout = [t for t in tasks if t["split"] == "heldout"]
    demonstrate = load_agent(f"{EXAMPLE / 'agent.py'}:demonstration")
    lora = PolicyConfig(lora_rank=16, lora_alpha=32)
    base = AgentTrainConfig(
        adapter="sql-bench", run_name="sql-bench", steps=args.rl_steps, tasks_per_step=args.tasks_per_step,
        group_size=args.group_size, max_tokens=args.max_tokens, temperature=args.temperature,
        wait_timeout_s=3600, rollout_timeout_s=1800, update=UpdateConfig(learning_rate=args.learning_rate),
    )  # fmt: skip
    results: dict = {"settings": vars(args) | {"out": str(args.out)}, "phases": {}}
    started = time.monotonic()

    def phase(name: str, start: float, **values) -> None:
        results["phases"][name] = {**values, "seconds": round(time.monotonic() - start, 1)}
        print(json.dumps({name: results["phases"][name]}), flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-sql-") as folder:
        workdir = Path(folder)
        server, url, key = start_server(workdir)
        client = StoreClient(url, key)
        try:
            with RunnerPool(url, AGENT, key, args.runners, workdir / "runners"):
                policy = build_policy("smollm2", None, lora)
                t = time.monotonic()
                trainer = AgentTrainer(client, policy, train, replace(base, run_name="untrained"), log=print)
                trainer.publish()
                phase("untrained", t, heldout=trainer.evaluate(heldout))

                t = time.monotonic()
                warm = warm_up(
                    policy, demonstrations(train, demonstrate), WarmupConfig(steps=args.warmup_steps),
                    workdir / "warmup", demonstrations(heldout, demonstrate),
                )  # fmt: skip
                trainer.publish()
                phase("warm-up", t, warmup=warm, heldout=trainer.evaluate(heldout))

                runs = [("rl-air", base)]
                if args.no_air_too:
                    runs.append(("rl-no-air", replace(base, air_tool_error_reward=None)))
                for name, config in runs:
                    t = time.monotonic()
                    policy = build_policy("smollm2", None, lora)
                    start_from(policy, Path(warm["checkpoint"]))
                    config = replace(config, adapter=f"sql-bench-{name}", run_name=name)
                    trainer = AgentTrainer(client, policy, train, config, log=print)
                    trainer.publish()
                    steps = [
                        {k: v for k, v in trainer.step(i).items() if k != "trained_spans"}
                        for i in range(config.steps)
                    ]
                    phase(name, t, steps=steps, heldout=trainer.evaluate(heldout))
        finally:
            client.close()
            server.terminate()
            server.wait(timeout=120)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    results["cpu_seconds"] = {"trainer": round(own.ru_utime + own.ru_stime),
                              "server_and_runners": round(children.ru_utime + children.ru_stime)}  # fmt: skip
    results["wall_seconds"] = round(time.monotonic() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))

    print(f"\nheld-out questions solved ({len(heldout)}, greedy, the agent unmodified):")
    print("| policy | solved | rate | phase seconds |")
    print("|---|---|---|---|")
    for name, values in results["phases"].items():
        ev = values["heldout"]
        print(f"| {name} | {solved(ev)} | {ev['mean_reward']:.3f} | {values['seconds']} |")
    for name in ("rl-air", "rl-no-air"):
        if name in results["phases"]:
            rewards = [s.get("mean_reward") for s in results["phases"][name]["steps"]]
            skipped = sum("skipped" in s for s in results["phases"][name]["steps"])
            print(f"{name}: training reward per step {rewards}, steps skipped (all advantages 0): {skipped}")
    print(f"CPU seconds: {results['cpu_seconds']}, wall {results['wall_seconds']} s; written to {args.out}")


if __name__ == "__main__":
    main()
