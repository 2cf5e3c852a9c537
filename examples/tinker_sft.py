"""Supervised fine-tuning with the Tinker SDK against `resonance serve` (SmolLM2-135M on the CPU).

Written the way a Tinker user writes it (the cookbook's sl_loop): a LoRA training client, batches of
datums whose weights are 0 on the prompt and 1 on the answer, forward_backward + optim_step, a
held-out loss, and at the end save_state (to resume) and save_weights_for_sampler (to sample).

    resonance tenants create lab                          # prints rsk_...
    resonance serve &                                     # http://127.0.0.1:8000
    export TINKER_API_KEY=tml-rsk_... TINKER_BASE_URL=http://127.0.0.1:8000 TINKER_TELEMETRY=0
    python examples/tinker_sft.py --steps 30              # prints the paths it saved

The task (examples/tinker_digits.py): sort three number words. examples/tinker_rl.py continues from
the state this saves.
"""

from __future__ import annotations

import argparse
import random

import numpy as np
import tinker
from tinker import types
from tinker_digits import answer_tokens, problems, prompt_tokens


def datum(tokenizer, question: str, answer: str) -> types.Datum:
    prompt, completion = prompt_tokens(tokenizer, question), answer_tokens(tokenizer, answer)
    tokens = prompt + completion
    weights = [0.0] * (len(prompt) - 1) + [1.0] * len(completion)  # predict only the answer
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights},
    )


def mean_nll(result: types.ForwardBackwardOutput, batch: list[types.Datum]) -> float:
    logprobs = np.concatenate([out["logprobs"].to_numpy() for out in result.loss_fn_outputs])
    weights = np.concatenate([d.loss_fn_inputs["weights"].to_numpy() for d in batch])
    return float(-(logprobs * weights).sum() / weights.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-model", default="SmolLM2-135M-Instruct")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--name", default="sft-final")
    args = parser.parse_args()

    service = tinker.ServiceClient()  # TINKER_BASE_URL, TINKER_API_KEY
    training = service.create_lora_training_client(
        base_model=args.base_model, rank=args.rank, seed=0
    ).result()
    tokenizer = training.get_tokenizer()
    train, held_out = problems()
    held_out_batch = [datum(tokenizer, q, a) for q, a in held_out[:32]]
    before = mean_nll(training.forward(held_out_batch, "cross_entropy").result(), held_out_batch)
    print(f"held-out NLL per answer token before: {before:.3f}")
    rng = random.Random(0)
    for step in range(args.steps):
        batch = [datum(tokenizer, q, a) for q, a in rng.sample(train, args.batch_size)]
        fwdbwd = training.forward_backward(batch, "cross_entropy")
        optim = training.optim_step(
            types.AdamParams(learning_rate=args.learning_rate, beta1=0.9, beta2=0.95, eps=1e-8)
        )
        loss = mean_nll(fwdbwd.result(), batch)
        optim.result()
        print(f"step {step:3d}  train NLL {loss:.3f}")
    after = mean_nll(training.forward(held_out_batch, "cross_entropy").result(), held_out_batch)
    print(f"held-out NLL per answer token after {args.steps} steps: {after:.3f} (before {before:.3f})")
    state = training.save_state(args.name).result().path
    sampler = training.save_weights_for_sampler(args.name).result().path
    print(f"state: {state}\nsampler weights: {sampler}")


if __name__ == "__main__":
    main()
