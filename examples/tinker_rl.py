"""Reinforcement learning with the Tinker SDK against `resonance serve` (SmolLM2-135M on the CPU).

The cookbook's rl_loop, with a verifiable reward: each step takes the current weights as a sampler
(save_weights_and_get_sampling_client), samples a group of answers per prompt, scores them (1 for the
three number words sorted, else 0), centres the rewards within each group, and trains on the sampler's
own log-probabilities with the importance_sampling loss. The held-out pass rate (greedy answers on the
100 held-out prompts, whose answers no training prompt has) is measured before and after.

    python examples/tinker_sft.py --steps 30             # a warm start; prints its state path
    python examples/tinker_rl.py --init tinker://.../weights/sft-final --steps 20

(TINKER_BASE_URL / TINKER_API_KEY / TINKER_TELEMETRY as in examples/tinker_sft.py.)
"""

from __future__ import annotations

import argparse
import random

import numpy as np
import tinker
from tinker import types
from tinker_digits import problems, prompt_tokens, reward


def passes(sampler, tokenizer, pairs, max_tokens: int) -> np.ndarray:
    """1 or 0 per held-out prompt: whether the greedy answer is sorted."""
    prompts = [types.ModelInput.from_ints(prompt_tokens(tokenizer, q)) for q, _ in pairs]
    greedy = types.SamplingParams(max_tokens=max_tokens, temperature=0.0)
    futures = [sampler.sample(prompt, 1, greedy) for prompt in prompts]  # all in flight at once
    answers = [tokenizer.decode(f.result().sequences[0].tokens, skip_special_tokens=True) for f in futures]
    return np.array([reward(q, a) for (q, _), a in zip(pairs, answers, strict=True)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-model", default="SmolLM2-135M-Instruct")
    parser.add_argument("--init", default=None, help="a tinker:// training state to start from")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt")
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--eval", type=int, default=100, help="held-out prompts (at most 100)")
    args = parser.parse_args()

    service = tinker.ServiceClient()
    if args.init:
        training = service.create_training_client_from_state_with_optimizer(args.init).result()
    else:
        training = service.create_lora_training_client(
            base_model=args.base_model, rank=args.rank, seed=0
        ).result()
    tokenizer = training.get_tokenizer()
    train, held_out = problems()
    held_out = held_out[: args.eval]
    before = passes(
        training.save_weights_and_get_sampling_client().result(), tokenizer, held_out, args.max_tokens
    )
    print(f"held-out pass rate before: {before.mean():.3f} ({before.sum():.0f} of {len(before)})")
    rng = random.Random(1)
    for step in range(args.steps):
        sampler = training.save_weights_and_get_sampling_client().result()
        batch = rng.sample(train, args.prompts)
        params = types.SamplingParams(max_tokens=args.max_tokens, temperature=1.0)
        prompts = [prompt_tokens(tokenizer, q) for q, _ in batch]
        futures = [sampler.sample(types.ModelInput.from_ints(p), args.group, params) for p in prompts]
        datums, rewards_seen = [], []
        for (question, _), prompt, future in zip(batch, prompts, futures, strict=True):
            sequences = future.result().sequences
            rewards = np.array(
                [reward(question, tokenizer.decode(s.tokens, skip_special_tokens=True)) for s in sequences]
            )
            rewards_seen.extend(rewards)
            advantages = rewards - rewards.mean()
            if not advantages.any():
                continue  # a group that agrees teaches nothing
            for seq, advantage in zip(sequences, advantages, strict=True):
                tokens = prompt + seq.tokens
                n_prompt = len(prompt) - 1
                datums.append(
                    types.Datum(
                        model_input=types.ModelInput.from_ints(tokens[:-1]),
                        loss_fn_inputs={
                            "target_tokens": tokens[1:],
                            "logprobs": [0.0] * n_prompt + list(seq.logprobs),
                            "advantages": [0.0] * n_prompt + [float(advantage)] * len(seq.tokens),
                        },
                    )
                )
        if datums:
            fwdbwd = training.forward_backward(datums, "importance_sampling")
            optim = training.optim_step(
                types.AdamParams(learning_rate=args.learning_rate, beta1=0.9, beta2=0.95, eps=1e-8)
            )
            fwdbwd.result()
            optim.result()
        print(f"step {step:3d}  mean reward {np.mean(rewards_seen):.3f}  trained on {len(datums)} samples")
    after = passes(
        training.save_weights_and_get_sampling_client().result(), tokenizer, held_out, args.max_tokens
    )
    print(
        f"held-out pass rate after {args.steps} steps: {after.mean():.3f} ({after.sum():.0f} of {len(after)}; "
        f"before {before.mean():.3f}); prompts newly solved {(after > before).sum()}, "
        f"newly failed {(after < before).sum()}"
    )
    print(f"sampler weights: {training.save_weights_for_sampler('rl-final').result().path}")


if __name__ == "__main__":
    main()
