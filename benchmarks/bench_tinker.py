"""The Tinker service's cost: the same training steps through the official SDK and ``resonance serve`` vs
in process, and 4 concurrent clients batched by one server vs the same clients one after another.

Side by side in one run, on SmolLM2-135M-Instruct (CPU, LoRA rank 16 on attention and MLP):

1. SFT step (forward_backward cross_entropy + optim_step on 8 sequences of 64 tokens):
   a. in process, our LM policy (``LMPolicy``: peft LoRA, ``token_logprobs``, AdamW): the trainer path;
   b. in process, the service's own backend (``LoraSlots``, same code as the server, no HTTP);
   c. through the SDK against the server. Overhead = c / a - 1 (goal <= 15%), and c / b - 1.
2. RL step (save_weights_and_get_sampling_client, sample 4 x 16 tokens, importance_sampling, optim_step):
   b vs c as above.
3. Batching: 4 SDK clients training at once against one server vs the same 4 clients' steps run one
   client at a time (what 4 separate single-client servers would each spend, summed on one machine);
   and the same in process (the backend's ``forward_backward`` of 4 runs in one pass vs 4 passes).
   Each client runs ``--client-steps`` SFT steps in a row per round (a training loop: the server
   batches concurrent runs from their second step on); the server's runs-per-pass histogram
   (``/metrics``) is printed with it.
4. Sampling (``--parts sampling``): an RL step's or an evaluation's sample requests (16 prompts of 24
   tokens, 4 samples of 16 tokens each) sent to one sampler at once, which the server decodes together,
   vs the same requests sent one at a time (each waited for); the tokens must be equal.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/bench_tinker.py [--steps 5] [--parts all|batching|sampling]
[--rows 8] [--client-steps 1]`` (``all``: parts 1 and 2). Prints a table. The variants take turns step by step, so a change in the machine's load
falls on all of them alike.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("TINKER_TELEMETRY", "0")

BASE = "SmolLM2-135M-Instruct"
RANK = 16
BATCH, LENGTH = 8, 64
LR = 1e-4


def smollm2_folder() -> str:
    from resonance_os.quality import reference_lm

    folder = reference_lm.default_cache_dir()
    if not (folder / "config.json").is_file():
        reference_lm.load_model(str(folder))
    return str(folder)


def sft_batch(vocab: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(100, vocab - 100, LENGTH + 1).tolist() for _ in range(BATCH)]


def interleaved(steps: dict[str, object], repeats: int) -> dict[str, list[float]]:
    """Seconds per call of each step, the steps taking turns (one warm-up round first), so a change
    in the machine's load during the run falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(repeats + 1):
        for name, fn in steps.items():
            start = time.perf_counter()
            fn()
            if round_:
                times[name].append(time.perf_counter() - start)
    return times


# ------------------------------------------------------------------------------------------ in process
def in_process_policy(folder: str, batch: list[list[int]]):
    """Our trainer's path: LMPolicy (peft LoRA) token_logprobs, summed NLL, AdamW."""
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    torch.manual_seed(0)
    policy = LMPolicy.from_pretrained(folder, PolicyConfig(lora_rank=RANK, lora_alpha=32.0))
    optimizer = torch.optim.AdamW(
        policy.trainable_parameters(), lr=LR, betas=(0.9, 0.95), eps=1e-12, foreach=False
    )
    ids = torch.tensor(batch)
    mask = torch.ones_like(ids)
    completion = torch.ones(len(batch), LENGTH)

    def step() -> None:
        logp = policy.token_logprobs(ids, mask, completion)
        (-logp.sum()).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def in_process_backend(folder: str, batch: list[list[int]]):
    """The server's backend called directly (no HTTP, no futures): SFT step and RL step times."""
    from resonance_os.api.tinker import backend
    from resonance_os.api.tinker.wire import Datum, FwdBwdRequest
    from resonance_os.llm.lora_slots import LoraSpec

    tokenizer, model, folder = backend.load_base_model(folder)
    base = backend.BaseModel(BASE, tokenizer, model, folder)
    run = base.add_run("bench", LoraSpec(RANK, train_unembed=False), seed=0)
    data = [
        Datum(np.array(s[:-1]), {"target_tokens": np.array(s[1:]), "weights": np.ones(LENGTH, np.float32)})
        for s in batch
    ]
    request = FwdBwdRequest("bench", 1, "cross_entropy", {}, False, data)
    adam = {"learning_rate": LR}

    def sft() -> None:
        backend.forward_backward(base, [backend.FwdBwdItem(run, request, {})])
        backend.optim_step(run, adam)

    prompt = batch[0][:16]
    params = backend.SampleParams(max_tokens=16, temperature=1.0, top_k=-1, top_p=1.0, seed=0, stop=[])
    sample_request = backend.sampling_request(base, prompt, 4, params)

    def rl() -> None:
        snapshot = "bench-snapshot"
        base.slots.remove(snapshot)
        base.slots.add(snapshot, run.spec, seed=0)
        base.slots.load_state_dict(snapshot, base.slots.state_dict("bench"))
        [(sequences, _)] = backend.sample(base, snapshot, [(prompt, sample_request)])
        rows = []
        for seq in sequences:
            tokens = prompt + seq.tokens
            n = len(prompt) - 1
            rows.append(
                Datum(
                    np.array(tokens[:-1]),
                    {
                        "target_tokens": np.array(tokens[1:]),
                        "logprobs": np.array([0.0] * n + seq.logprobs, np.float32),
                        "advantages": np.array([0.0] * n + [1.0] * len(seq.tokens), np.float32),
                    },
                )
            )
        rl_request = FwdBwdRequest("bench", 1, "importance_sampling", {}, False, rows)
        backend.forward_backward(base, [backend.FwdBwdItem(run, rl_request, {})])
        backend.optim_step(run, adam)

    return sft, rl


def in_process_batching(folder: str, batch: list[list[int]], clients: int = 4):
    """(one forward_backward pass over ``clients`` runs' batches, the same runs one pass each)."""
    from resonance_os.api.tinker import backend
    from resonance_os.api.tinker.wire import Datum, FwdBwdRequest
    from resonance_os.llm.lora_slots import LoraSpec

    tokenizer, model, folder = backend.load_base_model(folder)
    base = backend.BaseModel(BASE, tokenizer, model, folder)
    data = [
        Datum(np.array(s[:-1]), {"target_tokens": np.array(s[1:]), "weights": np.ones(LENGTH, np.float32)})
        for s in batch
    ]
    items = [
        backend.FwdBwdItem(
            base.add_run(f"bench{i}", LoraSpec(RANK, train_unembed=False), seed=i),
            FwdBwdRequest(f"bench{i}", 1, "cross_entropy", {}, False, data),
            {},
        )
        for i in range(clients)
    ]

    def together() -> None:
        backend.forward_backward(base, items)

    def one_at_a_time() -> None:
        for item in items:
            backend.forward_backward(base, [item])

    return together, one_at_a_time


# ------------------------------------------------------------------------------------------ the service
class Server:
    def __init__(self, folder: str) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="bench-tinker-"))
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = f"sqlite:///{self.home / 'service.db'}"
        env = {
            **os.environ,
            "RESONANCE_HOME": str(self.home),
            "RESONANCE_RATE_LIMIT": "100000",
            "RESONANCE_RATE_BURST": "100000",
            "RESONANCE_TINKER_BASE_MODELS": f"{BASE}={folder}",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "resonance_os.api.hr_server", "--port", str(self.port), "--db", self.db],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import httpx

        for _ in range(600):
            try:
                if httpx.get(f"{self.url}/api/v1/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        os.environ["RESONANCE_HOME"] = str(self.home)  # the key pepper is the server's
        from resonance_os.api.persistence.db import Database
        from resonance_os.api.persistence.tenants import create_tenant

        database = Database(self.db)
        self.key = "tml-" + create_tenant(database, f"bench-{uuid.uuid4().hex[:8]}")
        database.dispose()
        self.clients: list = []

    def service_client(self):
        """A tinker ServiceClient of the bench's tenant, closed by :meth:`stop` before the server stops."""
        import tinker

        self.clients.append(tinker.ServiceClient(base_url=self.url, api_key=self.key))
        return self.clients[-1]

    def stop(self) -> None:
        for client in self.clients:
            client.close("success").result(timeout=60)
        self.process.terminate()
        self.process.wait(timeout=60)


def sdk_steps(server: Server, batch: list[list[int]], clients: int = 1, client_steps: int = 1):
    """(SFT step, RL step) of one client; with clients > 1, (all clients' ``client_steps`` SFT steps
    each at once, the same steps one client at a time)."""
    from tinker import types

    service = server.service_client()
    runs = [
        service.create_lora_training_client(base_model=BASE, rank=RANK, seed=i, train_unembed=False).result()
        for i in range(clients)
    ]
    data = [
        types.Datum(
            model_input=types.ModelInput.from_ints(s[:-1]),
            loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * LENGTH},
        )
        for s in batch
    ]
    adam = types.AdamParams(learning_rate=LR)

    def sft(run, steps: int = 1) -> None:
        for _ in range(steps):
            fwdbwd = run.forward_backward(data, "cross_entropy")
            optim = run.optim_step(adam)
            fwdbwd.result()
            optim.result()

    if clients > 1:

        def together() -> None:
            threads = [threading.Thread(target=sft, args=(run, client_steps)) for run in runs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        def one_at_a_time() -> None:
            for run in runs:
                sft(run, client_steps)

        return together, one_at_a_time
    run = runs[0]
    prompt = batch[0][:16]

    def rl() -> None:
        sampler = run.save_weights_and_get_sampling_client().result()
        result = sampler.sample(
            types.ModelInput.from_ints(prompt), 4, types.SamplingParams(max_tokens=16, seed=0, stop=[])
        ).result()
        rows = []
        for seq in result.sequences:
            tokens = prompt + seq.tokens
            n = len(prompt) - 1
            rows.append(
                types.Datum(
                    model_input=types.ModelInput.from_ints(tokens[:-1]),
                    loss_fn_inputs={
                        "target_tokens": tokens[1:],
                        "logprobs": [0.0] * n + list(seq.logprobs),
                        "advantages": [0.0] * n + [1.0] * len(seq.tokens),
                    },
                )
            )
        fwdbwd = run.forward_backward(rows, "importance_sampling")
        optim = run.optim_step(adam)
        fwdbwd.result()
        optim.result()

    return (lambda: sft(run)), rl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--parts", choices=["all", "batching", "sampling"], default="all")
    parser.add_argument("--rows", type=int, default=BATCH, help=f"sequences per client's batch ({BATCH})")
    parser.add_argument(
        "--client-steps", type=int, default=1, help="SFT steps each client runs in a row per batching round"
    )
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    folder = smollm2_folder()
    from transformers import AutoConfig

    batch = sft_batch(AutoConfig.from_pretrained(folder).vocab_size)[: args.rows]
    if args.parts == "batching":
        batching(folder, batch, args.steps, args.client_steps)
        return
    if args.parts == "sampling":
        sampling(folder, sft_batch(AutoConfig.from_pretrained(folder).vocab_size), args.steps)
        return
    policy_sft = in_process_policy(folder, batch)
    backend_sft, backend_rl = in_process_backend(folder, batch)
    server = Server(folder)
    try:
        sdk_sft, sdk_rl = sdk_steps(server, batch)
        t = interleaved({"policy": policy_sft, "backend": backend_sft, "sdk": sdk_sft}, args.steps)
        policy, backend_sft, sdk_sft = t["policy"], t["backend"], t["sdk"]
        t = interleaved({"backend": backend_rl, "sdk": sdk_rl}, args.steps)
        backend_rl, sdk_rl = t["backend"], t["sdk"]
    finally:
        server.stop()
    med = statistics.median
    print(
        f"SmolLM2-135M, CPU threads {torch.get_num_threads()}, LoRA rank {RANK}, {BATCH}x{LENGTH} tokens, median of {args.steps} steps"
    )
    print(f"{'':44s}{'seconds':>10s}{'ratio':>10s}")
    print(f"{'SFT step, in process (LMPolicy, peft)':44s}{med(policy):10.3f}{1.0:10.2f}")
    print(
        f"{'SFT step, in process (service backend)':44s}{med(backend_sft):10.3f}{med(backend_sft) / med(policy):10.2f}"
    )
    print(
        f"{'SFT step, tinker SDK -> resonance serve':44s}{med(sdk_sft):10.3f}{med(sdk_sft) / med(policy):10.2f}"
    )
    print(
        f"  service overhead vs LMPolicy: {100 * (med(sdk_sft) / med(policy) - 1):+.1f}% (goal <= 15%); vs its own backend: {100 * (med(sdk_sft) / med(backend_sft) - 1):+.1f}%"
    )
    print(f"{'RL step, in process (service backend)':44s}{med(backend_rl):10.3f}{1.0:10.2f}")
    print(
        f"{'RL step, tinker SDK -> resonance serve':44s}{med(sdk_rl):10.3f}{med(sdk_rl) / med(backend_rl):10.2f}"
    )
    print(f"  service overhead: {100 * (med(sdk_rl) / med(backend_rl) - 1):+.1f}%")
    print("4 clients batched: --parts batching; sample requests decoded together: --parts sampling")


def histogram(server: Server, name: str) -> tuple[float, float]:
    """(observations, their sum) so far of the server's Prometheus histogram ``name`` (``/metrics``)."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(httpx.get(f"{server.url}/metrics", timeout=10).text):
        if family.name == name:
            values = {sample.name: sample.value for sample in family.samples}
            return values[f"{name}_count"], values[f"{name}_sum"]
    return 0.0, 0.0


PASS_RUNS = "resonance_tinker_forward_backward_pass_runs"  # runs a forward/backward pass computed
SAMPLE_RUNS = "resonance_tinker_sample_pass_requests"  # sample requests a sampling engine run decoded


def batching(folder: str, batch: list[list[int]], steps: int, client_steps: int = 1) -> None:
    """Only the batching figures: 4 runs' forward_backward in one pass vs one pass each (in process),
    and 4 SDK clients at once vs one at a time (SFT steps through the server)."""
    together, one = in_process_batching(folder, batch)
    t = interleaved({"together": together, "one": one}, steps)
    server = Server(folder)
    try:
        sdk_together, sdk_one = sdk_steps(server, batch, clients=4, client_steps=client_steps)
        seen: dict[str, list[float]] = {"together": [0.0, 0.0], "one": [0.0, 0.0]}

        def counted(name: str, fn):
            def run() -> None:
                before = histogram(server, PASS_RUNS)
                fn()
                after = histogram(server, PASS_RUNS)
                seen[name][0] += after[0] - before[0]
                seen[name][1] += after[1] - before[1]

            return run

        s = interleaved(
            {"together": counted("together", sdk_together), "one": counted("one", sdk_one)}, steps
        )
    finally:
        server.stop()
    med = statistics.median
    print(
        f"SmolLM2-135M, CPU threads {torch.get_num_threads()}, LoRA rank {RANK}, 4 clients x {len(batch)}x{LENGTH} tokens, "
        f"{client_steps} SFT step(s) per client a round, median of {steps}"
    )
    print(f"{'':52s}{'seconds':>10s}{'ratio':>10s}")
    print(f"{'in process: 4 runs forward_backward, one pass each':52s}{med(t['one']):10.3f}{1.0:10.2f}")
    print(
        f"{'in process: 4 runs forward_backward, one pass':52s}{med(t['together']):10.3f}{med(t['together']) / med(t['one']):10.2f}"
    )
    print(f"{'SDK: 4 clients, their SFT steps, one at a time':52s}{med(s['one']):10.3f}{1.0:10.2f}")
    print(
        f"{'SDK: 4 clients, their SFT steps, at once':52s}{med(s['together']):10.3f}{med(s['together']) / med(s['one']):10.2f}"
    )
    for name, (count, runs) in seen.items():
        print(
            f"  server passes ({name}, warm-up included): {count:.0f}, {runs / max(count, 1):.2f} runs a pass"
        )


def sampling(folder: str, rows: list[list[int]], steps: int) -> None:
    """16 sample requests to one sampler in flight at once vs one at a time, through the SDK."""
    from tinker import types

    server = Server(folder)
    try:
        sampler = server.service_client().create_sampling_client(base_model=BASE).result()
        prompts = [types.ModelInput.from_ints(row[:24]) for row in (rows * 2)[:16]]
        params = [types.SamplingParams(max_tokens=16, seed=i, stop=[]) for i in range(len(prompts))]
        tokens: dict[str, list] = {}

        def at_once() -> None:
            futures = [sampler.sample(p, 4, s) for p, s in zip(prompts, params, strict=True)]
            tokens["together"] = [[(q.tokens, q.logprobs) for q in f.result().sequences] for f in futures]

        def one_at_a_time() -> None:
            tokens["one"] = [
                [(q.tokens, q.logprobs) for q in sampler.sample(p, 4, s).result().sequences]
                for p, s in zip(prompts, params, strict=True)
            ]

        before = histogram(server, SAMPLE_RUNS)
        t = interleaved({"one": one_at_a_time, "together": at_once}, steps)
        runs, requests = (a - b for a, b in zip(histogram(server, SAMPLE_RUNS), before, strict=True))
    finally:
        server.stop()
    med = statistics.median
    print(
        f"SmolLM2-135M, CPU threads {torch.get_num_threads()}, 16 sample requests x 4 samples x 16 tokens "
        f"(24-token prompts), median of {steps}"
    )
    parted, gap, pairs = [], 0.0, 0
    for one, together in zip(tokens["one"], tokens["together"], strict=True):
        for (tokens_a, logprobs_a), (tokens_b, logprobs_b) in zip(one, together, strict=True):
            pairs += 1
            same = next((i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=True)) if x != y), None)
            upto = len(tokens_a) if same is None else same  # the same tokens drawn from the same context
            gap = max([gap] + [abs(x - y) for x, y in zip(logprobs_a[:upto], logprobs_b[:upto], strict=True)])
            if same is not None:
                parted.append(same)
    print(
        f"samples identical at once and alone: {pairs - len(parted)} of {pairs} (the others part at token "
        f"{sorted(parted)}); largest log-prob difference of the same token in the same context: {gap:.1e}"
    )
    print(f"{'':52s}{'seconds':>10s}{'ratio':>10s}")
    print(f"{'SDK: 16 sample requests, one at a time':52s}{med(t['one']):10.3f}{1.0:10.2f}")
    print(
        f"{'SDK: 16 sample requests, at once':52s}{med(t['together']):10.3f}{med(t['together']) / med(t['one']):10.2f}"
    )
    print(
        f"  sampling engine runs (both, warm-up included): {runs:.0f}, {requests / max(runs, 1):.2f} requests a run"
    )


if __name__ == "__main__":
    main()
