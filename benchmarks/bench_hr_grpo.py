"""HR-GRPO on SmolLM2-135M-Instruct + LoRA: does a short run move the held-out paragraphs toward the target?

Trains ``evolution.hr_grpo.train_hr_grpo`` (defaults of ``HR_GRPO_DEFAULTS``: G = 4, 2 prompts per step,
80 new tokens, dapo, lr 1e-4, LoRA rank 16) for ``--steps`` steps on the draft pool's training topics,
then samples ``--samples`` paragraphs for each of ``--eval-prompts`` held-out topics (the pool's
``heldout`` split) before (adapters disabled) and after (adapters on), same seeds, and prints the mean
writing terms (resonance, fluency, coherence, topic, repetition, reward; empty = share of replies the
writer's cleaning emptied), the seconds per step split into generate / score / train, and two
paragraphs before and after (the word-salad check: fluency and coherence must not fall), and a judge
the policy never trained against: the untrained SmolLM2's mean log-likelihood per token of the same
paragraphs (its fall measures drift from the base model, which the fast reward cannot see). With
``--reward lm`` the policy trains on the LM reward (``WritingReward(model="lm")``: SmolLM2's
likelihood for fluency and sentence order) and the held-out paragraphs are scored by both rewards (the
fast one is then the reward it never trained on); ``--score-lm`` adds the LM reward's reading to a
fast run. On ``--device cuda`` the reference LM (quality terms and judge) runs there too.
``--max-train-seconds`` ends training early (the header says how many steps ran).
Writes ``benchmarks/results/hr_grpo.json``.

    .venv/bin/python benchmarks/bench_hr_grpo.py                          # CPU, 8 steps, builtin/creative
    .venv/bin/python benchmarks/bench_hr_grpo.py --device cuda --steps 60 --eval-prompts 8 --samples 4 --reward lm
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from resonance_os.evolution.hr_grpo import (  # noqa: E402
    CHECK_TOPICS,
    HR_MAX_DRIFT,
    evaluate_hr_grpo,
    heldout_prompts,
    smollm2_policy,
    train_hr_grpo,
)
from resonance_os.quality import reference_lm  # noqa: E402
from resonance_os.quality.fluency import LMFluency  # noqa: E402
from resonance_os.quality.reward import WritingReward  # noqa: E402

TERMS = ("resonance", "fluency", "coherence", "topic", "repetition", "reward", "empty")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="builtin/creative")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--eval-prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default HR_GRPO_DEFAULTS)")
    parser.add_argument(
        "--beta", type=float, default=None, help="KL coefficient (default HR_GRPO_DEFAULTS: 0)"
    )
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument(
        "--reward", default="fast", choices=("fast", "lm"), help="the WritingReward models trained on"
    )
    parser.add_argument(
        "--max-train-seconds", type=float, default=None, help="stop training after this long (then evaluate)"
    )
    parser.add_argument(
        "--score-lm", action="store_true", help="also score the held-out paragraphs with the LM reward"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--style-power", type=float, default=1.0, help="k in resonance^k x quality (1 = the reward)"
    )
    parser.add_argument(
        "--early-stop-every", type=int, default=None,
        help="check the last 4 held-out topics every N steps; stop on drift, end with the best check's weights",
    )  # fmt: skip
    parser.add_argument(
        "--max-drift", type=float, default=HR_MAX_DRIFT, help="nats per token (early stopping)"
    )
    parser.add_argument(
        "--rollout-dtype", default=None, choices=("bfloat16",),
        help="sample the training completions from a bf16 copy of the policy (GRPOConfig.rollout_dtype)",
    )  # fmt: skip
    parser.add_argument(
        "--mixed-precision", default=None, choices=("bfloat16",),
        help="run the update's forward passes under bf16 autocast (GRPOConfig.mixed_precision)",
    )  # fmt: skip
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "hr_grpo.json"))
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)

    t0 = time.perf_counter()
    if args.device != "cpu":  # one reference LM per process: the quality terms and the judge score there
        reference_lm.load_model(str(reference_lm.default_cache_dir()))[1].to(args.device)
    rewards = {"fast": WritingReward()}
    if args.reward == "lm" or args.score_lm:
        rewards["lm"] = WritingReward(model="lm")
    policy = smollm2_policy(args.device)
    t_load = time.perf_counter() - t0
    topics = heldout_prompts()[: args.eval_prompts]
    if args.early_stop_every is not None and set(topics) & set(heldout_prompts()[-CHECK_TOPICS:]):
        parser.error(f"--eval-prompts {args.eval_prompts} reaches the early stopping's topics; use at most "
                     f"{len(heldout_prompts()) - CHECK_TOPICS}")  # fmt: skip
    config = {
        name: value
        for name, value in (
            ("learning_rate", args.lr),
            ("beta", args.beta),
            ("rollout_dtype", args.rollout_dtype),
            ("mixed_precision", args.mixed_precision),
        )
        if value is not None
    }

    # the target is resolved the same way train_hr_grpo does; evaluate before training (B = 0: the base model)
    from resonance_os.profiles.targets import resolve_target

    target, _ = resolve_target(profile=args.profile)
    t0 = time.perf_counter()
    before = evaluate_hr_grpo(
        policy, topics, target, samples=args.samples, seed=args.seed + 1, reward=rewards[args.reward]
    )
    t_eval = time.perf_counter() - t0
    deadline = None if args.max_train_seconds is None else time.perf_counter() + args.max_train_seconds

    def report(trainer, row) -> bool:
        print(f"step {row['timesteps']:>3}  reward {row['episode_reward_mean']:.3f}  resonance "
              f"{row['reward_resonance']:.3f}  fluency {row['reward_fluency']:.3f}  {row['time_step']:.1f} s",
              flush=True)  # fmt: skip
        return deadline is None or time.perf_counter() < deadline

    t0 = time.perf_counter()
    trainer = train_hr_grpo(
        profile=args.profile, steps=args.steps, policy=policy, config=config, seed=args.seed, progress_bar=False,
        style_power=args.style_power, early_stop_every=args.early_stop_every, max_drift=args.max_drift,
        reward=rewards[args.reward], callback=report,
    )  # fmt: skip
    t_train = time.perf_counter() - t0
    after = evaluate_hr_grpo(
        policy, topics, target, samples=args.samples, seed=args.seed + 1, reward=rewards[args.reward]
    )
    for name, scorer in rewards.items():  # every held-out paragraph scored by each reward
        for result in (before, after):
            scores = [scorer.score(text, target, prompt=topic) for topic, text in result["samples"] if text]
            result[f"{name}_terms"] = {
                term: statistics.mean(getattr(sc, term) for sc in scores) for term in TERMS[:-1]
            }
    # a held-out judge the policy never trained against: the untrained SmolLM2's mean log-likelihood
    # per token of the paragraphs (a drop = drift from the base model, the reward's blind spot)
    judge = LMFluency()
    for result in (before, after):
        logliks = judge.loglik_many([text for _, text in result["samples"] if text])
        result["reference_loglik"] = statistics.mean(x for x in logliks if x is not None)

    hist = trainer.history
    split = {
        k: statistics.mean(r[k] for r in hist)
        for k in ("time_generate", "time_score", "time_train", "time_step")
    }
    print(f"\nHR-GRPO, SmolLM2-135M-Instruct + LoRA r16, {args.device}, {args.threads} thread(s), profile "
          f"{args.profile}, {args.steps} steps x {trainer.config.prompts_per_step} prompts x G={trainer.config.group_size}, "
          f"lr {trainer.config.learning_rate}, beta {trainer.config.beta}, seed {args.seed}, style power {args.style_power}, "
          f"{args.reward} reward, rollouts {trainer.config.rollout_dtype or 'float32'}, update {trainer.config.mixed_precision or 'float32'}; "
          f"{len(hist)} steps run")  # fmt: skip
    print(f"held-out: {len(topics)} topics x {args.samples} samples; model load {t_load:.0f} s, one eval {t_eval:.0f} s, "
          f"training {t_train:.0f} s\n")  # fmt: skip
    print("| held-out mean | before (adapters off) | after | change |")
    print("|---|---|---|---|")
    for term in TERMS:
        print(f"| {term} | {before[term]:.3f} | {after[term]:.3f} | {after[term] - before[term]:+.3f} |")
    print(f"| untrained SmolLM2 log-lik per token (judge) | {before['reference_loglik']:.3f} | "
          f"{after['reference_loglik']:.3f} | {after['reference_loglik'] - before['reference_loglik']:+.3f} |")  # fmt: skip
    if len(rewards) > 1:
        for name in rewards:
            for term in TERMS[:-1]:
                b, a = before[f"{name}_terms"][term], after[f"{name}_terms"][term]
                print(f"| {term}, {name} reward | {b:.3f} | {a:.3f} | {a - b:+.3f} |")
    print("\n| per step (s) | generate | score | train | total |")
    print("|---|---|---|---|---|")
    print(f"| mean of {len(hist)} | {split['time_generate']:.1f} | {split['time_score']:.2f} | "
          f"{split['time_train']:.1f} | {split['time_step']:.1f} |")  # fmt: skip
    if "rollout_kl" in hist[0]:
        print(f"bf16 rollouts: KL(copy || policy) per token {statistics.mean(r['rollout_kl'] for r in hist):.2e}, "
              f"completions masked by the correction {statistics.mean(r['rollout_weight_zero'] for r in hist):.1%}")  # fmt: skip
    print("\ntraining reward by step:", " ".join(f"{r['episode_reward_mean']:.3f}" for r in hist))
    stop = trainer.hr_early_stopping
    if stop is not None:
        print(f"\nearly stopping (max drift {args.max_drift} nats/token): stopped at step {stop.stopped_at}, "
              f"weights of step {stop.best['step']} kept")  # fmt: skip
        print("| check step | held-out reward (check topics) | judge | drift |\n|---|---|---|---|")
        for c in stop.checks:
            print(f"| {c['step']} | {c['heldout_reward']:.3f} | {c['judge']:.3f} | {c['drift']:+.3f} |")
    for name, res in (("before", before), ("after", after)):
        for topic, text in [s for s in res["samples"] if s[1]][:2]:
            print(f"\n[{name}] {topic}: {text}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "before": before, "after": after, "history": hist,
                               "early_stopping": None if stop is None else stop.checks,
                               "time": {"load": t_load, "eval": t_eval, "train": t_train, **split}}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
