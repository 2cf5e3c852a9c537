"""GRPO sampling in this process vs on a rollout server (``GRPOConfig.rollout_server``), side by side.

The same GRPO run (SmolLM2-135M-Instruct + LoRA, or the tiny test model) twice, steps interleaved:

- **in-process**: ``llm.sampling.sample_ids`` on the policy (float32);
- **server**: a local ``resonance serve`` (float32 engine) speaking vLLM's protocol: each step's prompts
  through ``/v1/completions`` (token-id prompts, ``return_token_ids``, ``logprobs``), the adapter written
  to the shared folder and loaded with ``/v1/load_lora_adapter`` after each update.

Per step: seconds generating (the sync included for the server side) and the whole step, the sync
alone (peft save + load on the server), how many completions are the same tokens on both sides (same
seeds, same engine code; batches of another shape round differently, so a completion may part) and each
step's loss on both. Both sides share this machine's
cores, so the ratio is the cost of the HTTP path and the sync, not what a GPU server buys.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rollout_server.py [--model smollm2|tiny] [--steps 4]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _serve_process import start_serve, stop  # noqa: E402
from bench_grpo import PROMPTS, REWARDS, model_pair  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.precision import instruction_sets  # noqa: E402

PEPPER = "bench-rollout-server"


def start_server(home: Path, model_folder: Path, threads: int) -> tuple[subprocess.Popen, str, str, Path]:
    """``resonance serve`` on the model folder; returns the process, URL, a tenant key and its runs folder."""
    env = {
        "OMP_NUM_THREADS": str(threads), "RESONANCE_OPENAI_MODEL": str(model_folder),
        "RESONANCE_OPENAI_RUNS": str(home / "runs"), "RESONANCE_ENGINE_DTYPE": "float32",
        "RESONANCE_OPENAI_SEQUENCES": "64", "RESONANCE_OPENAI_TOKENS_PER_MINUTE": "100000000",
    }  # fmt: skip
    process, url, key = start_serve(home, PEPPER, env)
    return process, url, key, home / "runs" / "bench"


def _same_rows(a, b) -> str:  # type: ignore[no-untyped-def]
    """How many completions are the same tokens on both sides, and the earliest token where one differs."""
    rows, first = 0, None
    for r in range(len(a.completion_ids)):
        x = a.completion_ids[r][a.completion_mask[r].bool()].tolist()
        y = b.completion_ids[r][b.completion_mask[r].bool()].tolist()
        rows += x == y
        if x != y:
            at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            first = at if first is None else min(first, at)
    return f"{rows}/{len(a.completion_ids)}" + ("" if first is None else f" (first diff at token {first})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["smollm2", "tiny"], default="smollm2")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each side")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = {
        "group_size": args.group_size, "prompts_per_step": args.prompts_per_step,
        "max_new_tokens": args.max_new_tokens, "learning_rate": 1e-4, "seed": 0,
    }  # fmt: skip
    prompts, reward = PROMPTS[args.model], REWARDS[args.model]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        tokenizer, model = model_pair(args.model)
        folder = home / "base"
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        process, url, key, runs = start_server(home, folder, args.threads)
        try:
            os.environ["RESONANCE_ROLLOUT_API_KEY"] = key
            local = GRPO(LMPolicy(*model_pair(args.model), PolicyConfig(lora_rank=16, lora_alpha=32)), reward,
                         prompts, GRPOConfig(**config))  # fmt: skip
            start = time.perf_counter()
            remote = GRPO(
                LMPolicy(*model_pair(args.model), PolicyConfig(lora_rank=16, lora_alpha=32)), reward, prompts,
                GRPOConfig(**config, rollout_server=f"{url}/v1", rollout_folder=str(runs / "rollouts")),
            )  # fmt: skip
            connect = time.perf_counter() - start
            syncs: list[float] = []
            sync = remote.rollout_server.sync

            def timed_sync(*a, **k):  # type: ignore[no-untyped-def]
                t = time.perf_counter()
                out = sync(*a, **k)
                syncs.append(time.perf_counter() - t)
                return out

            remote.rollout_server.sync = timed_sync  # type: ignore[method-assign]
            samples: dict[str, list] = {"in-process": [], "server": []}
            for name, trainer in (("in-process", local), ("server", remote)):
                generate = trainer._generate

                def keep(*a, _g=generate, _n=name, **k):  # type: ignore[no-untyped-def]
                    out = _g(*a, **k)
                    samples[_n].append(out)
                    return out

                trainer._generate = keep  # type: ignore[method-assign]
            for _ in range(args.steps):
                local.learn(1, reset_num_timesteps=False)
                remote.learn(1, reset_num_timesteps=False)
        finally:
            stop(process)
    same = [_same_rows(a, b) for a, b in zip(samples["in-process"], samples["server"])]
    print(f"CPU: {instruction_sets()}; torch {torch.__version__}; model {args.model} + LoRA r16; "
          f"G={args.group_size} x {args.prompts_per_step} prompts, {args.max_new_tokens} new tokens; "
          f"{args.threads} thread(s) a side; load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"server: connect + first sync + log-prob probe {connect:.2f} s")
    print(
        "step | in-process generate / step s | server generate / step s | sync before s (step 1: connect) "
        "| same completions | loss (in / server)"
    )
    for s in range(args.steps):
        a, b = local.history[s], remote.history[s]
        print(f"{s + 1:4d} | {a['time_generate']:8.3f} / {a['time_step']:7.3f} | {b['time_generate']:8.3f} / "
              f"{b['time_step']:7.3f} | {syncs[s - 1] if s else connect:6.3f} | {same[s]} | "
              f"{a['loss']:.6f} / {b['loss']:.6f}")  # fmt: skip
    mean = lambda h, k: sum(r[k] for r in h) / len(h)  # noqa: E731
    print(f"mean step: in-process {mean(local.history, 'time_step'):.3f} s, server {mean(remote.history, 'time_step'):.3f} s "
          f"(ratio server/in-process {mean(remote.history, 'time_step') / mean(local.history, 'time_step'):.2f}x); "
          f"mean sync {sum(syncs) / max(len(syncs), 1):.3f} s; server rollout_kl step 1 "
          f"{remote.history[0].get('rollout_kl', float('nan')):.2e}")  # fmt: skip


if __name__ == "__main__":
    main()
