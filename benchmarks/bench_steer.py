"""Steering SmolLM2 along each HRV dimension: dose-response, crosstalk, fluency and topic on held-out prompts.

For every dimension with a direction (``generation.steering_directions``; default the package's own,
``--directions FOLDER`` for candidates from ``scripts/build_steering_directions.py``), the local
SmolLM2 backend writes a short paragraph for each HELD-OUT prompt (``HELDOUT_PROMPTS``: never used to
build the directions or choose their layer and gain) at strengths -1, -0.5, 0, 0.5, 1, ``--samples``
replies per cell, all of one dimension's rows in one engine run (``sample_steered``: per-request
additions, continuous batching). Each reply is measured with the ``HRVExtractor``, scored by the writing
reward (``quality.reward``: its fast fluency, the n-gram SLOR term; topic, mention and relatedness to
the prompt) and by the fluency judge (``quality.judge``: calibrated fluency under Gemma-3-270M, a model
the reward and the writer never read). Fluency in the pass rule is the judge's: the fast term rated
storytelling at +0.5 0.85-0.92, text a reader cannot follow.

Printed, side by side with unsteered (strength 0) in the same run:
* dose-response: the mean measured dimension at each strength; Spearman rho between strength and
  that mean (the dose-response curve, 5 points) and rho over every reply (pooled, per-text noise in);
* judged fluency at each strength, as a ratio of unsteered, the fast fluency and topic at each strength;
* crosstalk: row = dimension steered, column = dimension measured, mean at +1 minus mean at -1
  (the diagonal is the intended effect); and each row's largest off-diagonal move over its diagonal.

A dimension PASSES when the curve's rho >= 0.8, its effect is positive, and judged fluency at -0.5
and at +0.5 is within 10% of unsteered (ratio >= 0.9). ``--json`` writes the tables and the passed/failed lists, which
``scripts/build_steering_directions.py --ship`` turns into the package data.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_steer.py [--directions build/steering] \
        [--prompts 6] [--samples 1] [--tokens 48] [--json build/steer.json]

``--speed`` measures the sampling instead, side by side in one run: the same steered rows (every
direction's first ``--prompts`` prompts x 5 strengths) through ``sample_steered`` (the generation
engine) and through the path it replaced (one batched transformers ``generate`` under the
``llm.steering`` hooks, kept here only as the reference), alternating ``--repeats`` times; printed: CPU
seconds of this process per reply (run it with one thread: what a reply costs an idle core, whatever
the machine's load), wall seconds, new tokens per reply, and the ratio.

    OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_steer.py --speed [--prompts 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "2")

from scipy.stats import spearmanr  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.steering_directions import (  # noqa: E402
    FLUENCY_GOAL,
    RHO_GOAL,
    TRAIN_PROMPTS,
    SteeringDirections,
    sample_steered,
    writing_messages,
)
from resonance_os.quality.judge import JUDGE_NAME  # noqa: E402

STRENGTHS = (-1.0, -0.5, 0.0, 0.5, 1.0)
HELDOUT_PROMPTS = (
    "the first snow of winter in a small town",
    "why people keep houseplants",
    "a night shift at a hospital",
    "learning to play the violin",
    "the closing of a local factory",
    "tea ceremonies around the world",
    "fixing a leaking roof",
    "a ferry crossing in rough weather",
)
SHORT = {
    "sentence_variance": "sent_var",
    "emotional_valence": "valence",
    "emotional_intensity": "intensity",
    "assertiveness_index": "assert",
    "curiosity_index": "curiosity",
    "metaphor_density": "metaphor",
    "storytelling_index": "story",
    "active_voice_ratio": "active",
}
assert not set(HELDOUT_PROMPTS) & set(TRAIN_PROMPTS)


def measure(directions: SteeringDirections, prompts: list[str], samples: int, tokens: int, seed: int) -> dict:
    """Per steered dimension: arrays of strength, measured HRV (N, 8), fluency, topic over all replies."""
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.quality.judge import fluency_judge
    from resonance_os.quality.reward import WritingReward

    backend, reward, judge = LocalBackend(), WritingReward(), fluency_judge()
    out = {}
    for dim in directions.available:
        rows = [(p, s) for s in STRENGTHS for p in prompts for _ in range(samples)]
        started = time.perf_counter()
        replies = sample_steered(
            backend,
            [writing_messages(p) for p, _ in rows],
            [{dim: s} for _, s in rows],
            directions,
            seed,
            tokens,
        )
        scores = [
            reward.score(r, [0.5] * 8, prompt=p) if r.strip() else None for r, (p, _) in zip(replies, rows)
        ]
        judged = judge.score_many(replies)
        kept = [i for i, s in enumerate(scores) if s is not None]
        out[dim] = {
            "strength": np.array([rows[i][1] for i in kept]),
            "hrv": np.array([scores[i].hrv for i in kept]),
            "fluency": np.array([scores[i].fluency for i in kept]),
            "judged": np.array([judged[i] for i in kept]),
            "topic": np.array([scores[i].topic for i in kept]),
            "empty": len(rows) - len(kept),
            "seconds": time.perf_counter() - started,
            "examples": {
                s: next(r for r, (p, st) in zip(replies, rows) if st == s and p == prompts[0])
                for s in (-1.0, 0.0, 1.0)
            },
        }
        print(f"  {dim}: {len(rows)} replies in {out[dim]['seconds']:.0f} s", file=sys.stderr)
    return out


def summarise(dim: str, m: dict, layer: int) -> dict:
    d = HRV_DIMENSIONS.index(dim)
    at = {s: m["strength"] == s for s in STRENGTHS}
    curve = [float(m["hrv"][at[s], d].mean()) for s in STRENGTHS]
    fluency = [float(m["fluency"][at[s]].mean()) for s in STRENGTHS]
    topic = [float(m["topic"][at[s]].mean()) for s in STRENGTHS]
    judged = [float(m["judged"][at[s]].mean()) for s in STRENGTHS]
    rho_curve = float(spearmanr(STRENGTHS, curve).statistic)
    rho_pooled = float(spearmanr(m["strength"], m["hrv"][:, d]).statistic)
    judged_ratio = [v / judged[2] for v in judged]
    ratio = {"-0.5": judged_ratio[1], "+0.5": judged_ratio[3]}
    crosstalk = (m["hrv"][at[1.0]].mean(0) - m["hrv"][at[-1.0]].mean(0)).tolist()
    # rho of 5 points takes discrete values (0.8 = two adjacent swaps); float error must not fail it
    passed = rho_curve >= RHO_GOAL - 1e-9 and crosstalk[d] > 0 and min(ratio.values()) >= FLUENCY_GOAL
    return {
        "curve": curve, "rho_curve": rho_curve, "rho_pooled": rho_pooled, "fast_fluency": fluency, "topic": topic,
        "judge_fluency": judged, "judged_fluency": judged_ratio, "judge": JUDGE_NAME,
        "fluency_ratio_half": ratio, "crosstalk": crosstalk, "passed": bool(passed), "empty": m["empty"],
        "layer": layer, "seconds": round(m["seconds"]), "examples": {f"{k:+.0f}": v for k, v in m["examples"].items()},
    }  # fmt: skip


def generate_steered(
    backend, messages: list, steer: list, directions: SteeringDirections, seed: int, max_tokens: int
) -> list[str]:
    """The replaced path, the reference of ``--speed``: one batched ``generate`` (left-padded rows, the
    backend's decoding settings) with per-row additions through ``llm.steering.steering`` hooks."""
    import torch

    from resonance_os.generation.backends.local import STOP_STRINGS
    from resonance_os.llm.steering import steering

    tokenizer, model = backend.tokenizer, backend.model
    tokenizer.padding_side = "left"
    texts = [tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    torch.manual_seed(seed)
    with steering(model, directions.additions(steer)), torch.inference_mode():
        output = model.generate(
            **inputs, max_new_tokens=max_tokens, do_sample=True, temperature=backend.temperature,
            top_p=backend.top_p, repetition_penalty=backend.repetition_penalty,
            no_repeat_ngram_size=backend.no_repeat_ngram_size, stop_strings=list(STOP_STRINGS),
            tokenizer=tokenizer, pad_token_id=pad_id, use_cache=True,
        )  # fmt: skip
    start = inputs["input_ids"].shape[1]
    return [tokenizer.decode(row[start:], skip_special_tokens=True).strip() for row in output]


def speed(directions: SteeringDirections, prompts: list[str], tokens: int, seed: int, repeats: int) -> None:
    """``--speed``: sample_steered (engine) against generate_steered (the replaced path), same rows."""
    import torch

    from resonance_os.generation.backends.local import LocalBackend

    backend = LocalBackend()
    rows = [(p, {d: s}) for d in directions.available for s in STRENGTHS for p in prompts]
    messages, steer = [writing_messages(p) for p, _ in rows], [s for _, s in rows]
    paths = {"sample_steered (engine)": sample_steered, "generate + steering hooks": generate_steered}
    print(f"bench_steer --speed: {len(rows)} steered rows ({len(directions.available)} directions x "
          f"{len(STRENGTHS)} strengths x {len(prompts)} held-out prompts), up to {tokens} new tokens, "
          f"{torch.get_num_threads()} thread(s), load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for run in paths.values():  # warm both (first-call allocations, the tokenizer's stop-string tables)
        run(backend, messages[:2], steer[:2], directions, seed, 4)
    figures: dict[str, list[tuple[float, float, int]]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, run in paths.items():
            cpu, wall = time.process_time(), time.perf_counter()
            replies = run(backend, messages, steer, directions, seed, tokens)
            spent = (time.process_time() - cpu, time.perf_counter() - wall)
            kept = sum(len(backend.tokenizer(r, add_special_tokens=False)["input_ids"]) for r in replies)
            figures[name].append((*spent, kept))
    print("| path                      | CPU s/reply | wall s/reply | reply tokens | CPU ms/reply token |")
    for name, runs in figures.items():
        cpu, wall, kept = (sum(f[i] for f in runs) for i in range(3))
        replies = repeats * len(rows)
        print(f"| {name:<25} | {cpu / replies:>11.3f} | {wall / replies:>12.3f} | {kept / replies:>12.1f} | "
              f"{1000 * cpu / max(kept, 1):>18.1f} |")  # fmt: skip
    engine, generate = (sum(f[0] for f in runs) for runs in figures.values())
    print(f"CPU per reply, generate / engine: {generate / engine:.2f}x ({repeats} alternating runs of each)")


def print_tables(summary: dict, prompts: list[str]) -> None:
    head = " ".join(f"{s:>+6.1f}" for s in STRENGTHS)
    print(
        f"\nDose-response: mean measured dimension at each strength (held-out prompts: {', '.join(prompts)})"
    )
    print(f"| {'dimension':<20} | layer | {head} | rho (curve) | rho (pooled) | pass |")
    for dim, s in summary.items():
        cells = " ".join(f"{v:6.3f}" for v in s["curve"])
        print(f"| {dim:<20} | {s['layer']:>5} | {cells} | {s['rho_curve']:>11.2f} | "
              f"{s['rho_pooled']:>12.2f} | {'yes' if s['passed'] else 'no':>4} |")  # fmt: skip

    print(
        f"\nJudged fluency ({JUDGE_NAME}) over unsteered (pass >= {FLUENCY_GOAL} at +-0.5), judged fluency, "
        "and the reward's fast fluency and topic, at each strength"
    )
    print(f"| {'dimension':<20} | judged {head} | judge {head} | fast fluency {head} | topic {head} |")
    for dim, s in summary.items():
        cells = [
            " ".join(f"{v:6.3f}" for v in s[key])
            for key in ("judged_fluency", "judge_fluency", "fast_fluency", "topic")
        ]
        print(f"| {dim:<20} | " + " | ".join(cells) + " |")

    print("\nCrosstalk: measured(+1) - measured(-1); row = steered, column = measured")
    print(
        f"| {'steered':<20} | "
        + " | ".join(f"{SHORT[d]:>9}" for d in HRV_DIMENSIONS)
        + " | worst off-diag / diag |"
    )
    for dim, s in summary.items():
        d = HRV_DIMENSIONS.index(dim)
        off = max(abs(v) for e, v in enumerate(s["crosstalk"]) if e != d)
        diag = s["crosstalk"][d]
        ratio = off / abs(diag) if diag else float("inf")
        print(f"| {dim:<20} | " + " | ".join(f"{v:>+9.3f}" for v in s["crosstalk"]) + f" | {ratio:>20.2f} |")

    print("\nExamples (first prompt, strength -1 / 0 / +1):")
    for dim, s in summary.items():
        for strength, text in s["examples"].items():
            print(f"  {dim} {strength}: {text[:160]!r}")
    passed = [d for d, s in summary.items() if s["passed"]]
    failed = [d for d in HRV_DIMENSIONS if d not in passed]
    print(f"\npassed: {', '.join(passed) or 'none'}; not passed: {', '.join(failed)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--directions", type=Path, default=None, help="folder with <model>.json (default: package data)"
    )
    parser.add_argument(
        "--dims", nargs="+", default=None, help="only these dimensions (default: every direction)"
    )
    parser.add_argument("--prompts", type=int, default=6, help=f"held-out prompts, 1-{len(HELDOUT_PROMPTS)}")
    parser.add_argument("--samples", type=int, default=1, help="replies per prompt and strength")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per reply")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="write tables and passed/failed here")
    parser.add_argument(
        "--speed",
        action="store_true",
        help="time sample_steered (engine) against the generate path it replaced",
    )
    parser.add_argument("--repeats", type=int, default=2, help="--speed: alternating runs of each path")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="print and join the --json files of runs over disjoint --dims",
    )
    args = parser.parse_args()
    if args.merge:
        runs = [json.loads(p.read_text()) for p in args.merge]
        summary = {d: r["summary"][d] for r in runs for d in HRV_DIMENSIONS if d in r["summary"]}
        prompts = runs[0]["summary"]["prompts"]
        print_tables(summary, prompts)
        print(
            f"time: {' + '.join(str(r['summary']['seconds']) for r in runs)} s wall in {len(runs)} processes run side by side"
        )
        if args.json is not None:
            write_report(args.json, summary, prompts, max(r["summary"]["seconds"] for r in runs))
        return
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    directions = SteeringDirections.load(args.directions)
    if args.dims:
        directions = SteeringDirections(
            directions.model, {d: directions.layers[d] for d in args.dims}, {d: directions.vectors[d] for d in args.dims},
            directions.manifest,
        )  # fmt: skip
    prompts = list(HELDOUT_PROMPTS[: args.prompts])
    if args.speed:
        speed(directions, prompts, args.tokens, args.seed, args.repeats)
        return
    started = time.perf_counter()
    print(f"bench_steer: {len(directions.available)} directions ({directions.model}), {len(prompts)} held-out "
          f"prompts x {len(STRENGTHS)} strengths x {args.samples} samples, {args.tokens} new tokens, "
          f"{torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}", file=sys.stderr)  # fmt: skip
    measured = measure(directions, prompts, args.samples, args.tokens, args.seed)
    summary = {dim: summarise(dim, m, directions.layers[dim]) for dim, m in measured.items()}
    elapsed = time.perf_counter() - started
    print_tables(summary, prompts)
    print(
        f"time: {elapsed:.0f} s wall ({torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f} at the end)"
    )
    if args.json is not None:
        write_report(args.json, summary, prompts, elapsed)


def write_report(path: Path, summary: dict, prompts: list[str], seconds: float) -> None:
    passed = [d for d, s in summary.items() if s["passed"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "passed": passed,
        "failed": [d for d in HRV_DIMENSIONS if d not in passed],
        "summary": {**summary, "prompts": prompts, "seconds": round(seconds)},
    }
    path.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
