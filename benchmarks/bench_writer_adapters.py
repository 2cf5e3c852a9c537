"""Writer adapters (issue 41): "write like X" for three writers, attributed by two independent rules.

For each shipped writer (``voice.corpora``: austen, twain, poe), what ``resonance profiles from-corpus
DIR --adapter`` does for a user: the writer's profile is the HRV of their train paragraphs joined
(``voice.profile_match.writer_profiles``), and a voice adapter is trained from ``--paragraphs`` of
those paragraphs (``evolution.voice_adapters``: SFT on the ``--keep`` nearest the profile, default
48, ``--sft-steps``; with ``--validation`` a tenth of the paragraphs is held out and SFT stops when
their loss stops falling, as ``from-corpus --adapter`` does; then ``--grpo-steps`` HR-GRPO steps,
default 0 as in the one earlier trial, with ``--writer-reward W`` blending in at weight W the
probability that the writer wrote each paragraph by a word n-gram classifier, not the character
n-gram check; ``--start DIR`` goes on from the adapter in DIR/<writer>/ without SFT). The default writer then
writes ``--prompts`` 3-paragraph articles on ``bench_voice.PROMPTS`` (held out: none is a topic of
the writers' books or of any training prompt) toward the writer's profile, with the same seeds, once
with the bare model and once with the writer's adapter. Both are attributed by ``bench_voice``'s two
rules (the stylometric classifier fitted on the writers' train books; the HRV nearest writer profile),
with each article's largest share of word 8-grams copied from the writer's train paragraphs.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_writer_adapters.py [--writers austen twain poe] \\
        [--prompts 3] [--paragraphs 400] [--keep 48] [--sft-steps 18] [--validation] \\
        [--grpo-steps N [--grpo-lr 5e-5] [--writer-reward 0.5] [--start build/wa3]] [--out benchmarks/results/writer_adapters.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import asdict, replace  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from bench_voice import PROMPTS, report_generated  # noqa: E402

from resonance_os.core.hrv_types import mean_gap  # noqa: E402
from resonance_os.evolution.voice_adapters import (  # noqa: E402
    VOICE_FILE,
    VoiceTraining,
    load_voice_policy,
    save_voice_adapter,
    split_validation,
    started_from,
    train_voice_adapter,
    writer_candidates,
)
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.voice.corpora import WRITERS, load_writer  # noqa: E402
from resonance_os.voice.profile_match import writer_profiles  # noqa: E402
from resonance_os.voice.stylometry import WriterReward, fit_classifier  # noqa: E402

VARIANTS = ("without", "with")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", nargs="+", default=list(WRITERS), choices=list(WRITERS))
    parser.add_argument("--prompts", type=int, default=3, help="held-out prompts (articles) per writer")
    parser.add_argument(
        "--paragraphs", type=int, default=400, help="train paragraphs the adapter learns from"
    )
    parser.add_argument(
        "--keep",
        type=int,
        default=VoiceTraining.keep,
        help="of those, the SFT paragraphs (nearest the profile)",
    )
    parser.add_argument("--sft-steps", type=int, default=VoiceTraining.sft_steps)
    parser.add_argument("--grpo-steps", type=int, default=0)
    parser.add_argument("--grpo-lr", type=float, default=VoiceTraining.grpo_learning_rate)
    parser.add_argument(
        "--max-drift",
        type=float,
        default=VoiceTraining.max_drift,
        help="HR-GRPO stops when its samples fall this many nats a token below its start's (the SFT'd adapter)",
    )
    parser.add_argument(
        "--writer-reward",
        type=float,
        default=0.0,
        help="HR-GRPO: weight of the word n-gram classifier's probability of the writer (0 = none)",
    )
    parser.add_argument(
        "--start",
        default=None,
        help="go on from the adapter in START/<writer>/ (HR-GRPO only, no SFT)",
    )
    parser.add_argument(
        "--validation",
        action="store_true",
        help="hold out every 10th train paragraph; SFT stops when their loss stops falling "
        "(--sft-steps is then the most) and keeps its best check",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure an adapter already in ADAPTERS/<writer>/ instead of training",
    )
    parser.add_argument("--adapters", default="build/writer_adapters", help="where the adapters are written")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "writer_adapters.json"))
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        parser.error(f"--prompts must be 1..{len(PROMPTS)}")
    if not 0.0 <= args.writer_reward <= 1.0:
        parser.error("--writer-reward must be in [0, 1]")
    if args.start and not args.grpo_steps:
        parser.error("--start goes on with HR-GRPO: give --grpo-steps")
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    profiles = writer_profiles()
    bare = HumanResonantWriter(adapter=False)
    texts: dict[str, dict[str, list[str]]] = {v: {} for v in VARIANTS}
    rows: list[dict] = []
    training: dict[str, dict] = {}
    words = fit_classifier(features="words") if args.writer_reward else None
    for name in args.writers:
        target = list(profiles[name])
        t0 = time.perf_counter()
        folder = Path(args.adapters) / name
        if args.reuse and (folder / VOICE_FILE).is_file():
            built = json.loads((folder / VOICE_FILE).read_text())
            # how it was trained is in its voice.json; this run's training options do not apply
            training[name] = built["training"] | {"reused": str(folder)}
            print(f"[{name}] reusing the adapter in {folder}", flush=True)
        else:
            candidates = writer_candidates(load_writer(name)[: args.paragraphs])
            held: list[tuple[str, str]] = []
            if args.validation:
                candidates, held = split_validation(candidates)
            settings = replace(
                VoiceTraining(), keep=min(args.keep, len(candidates)),
                sft_steps=0 if args.start else args.sft_steps, grpo_steps=args.grpo_steps,
                grpo_learning_rate=args.grpo_lr, max_drift=args.max_drift,
                reward_model_weight=args.writer_reward or VoiceTraining.reward_model_weight,
            )  # fmt: skip
            policy, summary = train_voice_adapter(
                target,
                candidates,
                validation=held,
                settings=settings,
                policy=load_voice_policy(Path(args.start) / name) if args.start else None,
                report=lambda msg, n=name: print(f"[{n}] {msg}", flush=True),
                reward_model=WriterReward(name, words) if words is not None else None,
            )
            if args.start:
                summary = started_from(Path(args.start) / name) | summary
            save_voice_adapter(policy, folder, target, source=f"writer {name}", summary=summary)
            del policy
            training[name] = {
                "seconds": round(time.perf_counter() - t0),
                "settings": asdict(settings),
            } | summary
        writers = {"without": bare, "with": HumanResonantWriter(adapter=str(folder))}
        for i, prompt in enumerate(PROMPTS[: args.prompts]):
            for variant in VARIANTS:
                t0 = time.perf_counter()
                article = writers[variant].generate(prompt, target, num_paragraphs=3, seed=i)
                texts[variant].setdefault(name, []).append(article.text)
                rows.append({
                    "writer": name, "prompt": prompt, "variant": variant, "backend": article.backend,
                    "gap": mean_gap(target, article.measured_hrv["article"]),
                    "seconds": round(time.perf_counter() - t0), "text": article.text,
                })  # fmt: skip
                print(
                    f"[{name}] {variant:7s} gap {rows[-1]['gap']:.3f} {rows[-1]['seconds']} s  {prompt}",
                    flush=True,
                )
        del writers  # one adapter writer in memory at a time (the run held 13 GB when the machine ran out)
        gc.collect()
    rates = {}
    for variant in VARIANTS:
        print(f"\n== articles {variant} the writer's adapter ==")
        rates[variant] = report_generated(texts[variant])
    load = os.getloadavg()[0]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "load": load, "training": training, "rates": rates,
                               "rows": rows}, indent=1))  # fmt: skip
    print(f"\nwritten {out} (load {load:.1f})")


if __name__ == "__main__":
    main()
