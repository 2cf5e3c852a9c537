"""Aim the article or each paragraph, and steer the model toward its gaps? The writer's variants side by side.

``planned`` writes every paragraph toward its planned target alone (``carry_gaps=False``,
``steer_gaps=False``); ``carried`` writes each paragraph toward its planned target plus the gap the
paragraphs before it left (``carry_gaps=True``, the writer's default, ``planner_layer.carried_target``);
``steered`` also steers the model, while it samples each later paragraph's candidates, on the
two steerable dimensions the article so far misses most (``steer_gaps=True``,
``steering_directions.gap_steer``; a voice adapter is then drafted merged into the weights). For each voice (the three built-in profiles
with their shipped voice adapters, or ``--writers``: the three writers with the adapters given by
``--writer-adapter NAME=DIR``) and each of ``bench_voice.PROMPTS`` (held out), each variant writes a
3-paragraph article with the same seed, and the table gives per voice and overall:

    mean |gap|     the article's mean |gap| to its own target (8 dimensions)
    nearest own    articles that measure nearest their own profile of the three
    fluency/topic  the fast writing reward's terms for the article
    stylometric    (writers) articles the character n-gram classifier attributes to their writer

and the ratio of each variant's mean gap to the first variant's. Every article goes to ``--out`` as it
is written. ``--backend builtin`` runs the template composer instead (no model, nothing to steer; seconds).

    OMP_NUM_THREADS=1 .venv/bin/python -W ignore benchmarks/bench_carry_gaps.py --prompts 6
    OMP_NUM_THREADS=1 .venv/bin/python -W ignore benchmarks/bench_carry_gaps.py --variants carried steered \\
        --out benchmarks/results/steer_gaps_builtin.json
    OMP_NUM_THREADS=1 .venv/bin/python -W ignore benchmarks/bench_carry_gaps.py --writers \\
        --writer-adapter austen=build/wa3/austen --writer-adapter twain=build/wa3/twain \\
        --writer-adapter poe=build/wa5/poe --out benchmarks/results/carry_gaps_writers.json
    .venv/bin/python benchmarks/bench_carry_gaps.py --backend builtin --out benchmarks/results/carry_gaps_composer.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from bench_voice import PROMPTS  # noqa: E402

from resonance_os.core.hrv_types import mean_gap  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.voice.profile_match import nearest_profile, writer_profiles  # noqa: E402

VARIANTS = {
    "planned": {"carry_gaps": False, "steer_gaps": False},
    "carried": {"carry_gaps": True, "steer_gaps": False},
    "steered": {"carry_gaps": True, "steer_gaps": True},
}


def voices(args: argparse.Namespace) -> dict[str, tuple[list[float], object, str | None]]:
    """name -> (target, adapter for the writer, target source); the template composer drafts with none
    (the parser refuses adapters with it)."""
    if args.writers:
        folders = dict(item.split("=", 1) for item in args.writer_adapter)
        return {name: (list(v), folders.get(name, False), None) for name, v in writer_profiles().items()}
    adapters = False if args.backend == "builtin" else args.adapters or True
    return {
        name: (
            t.vector.to_list(),
            adapters if isinstance(adapters, bool) else str(Path(adapters) / name),
            f"profile {t.key}",
        )
        for name, t in BUILTIN_TEMPLATES.items()
    }


def summary(rows: list[dict], variant: str, stylometric: bool) -> dict:
    mine = [r for r in rows if r["variant"] == variant]
    out = {
        "articles": len(mine),
        "mean_gap": statistics.fmean(r["gap"] for r in mine),
        "nearest_own": sum(r["nearest"] == r["voice"] for r in mine),
        "fluency": statistics.fmean(r["fluency"] for r in mine),
        "topic": statistics.fmean(r["topic"] for r in mine),
    }
    if stylometric:
        out["stylometric"] = sum(r["attributed"] == r["voice"] for r in mine)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prompts", type=int, default=len(PROMPTS), help=f"held-out prompts (<= {len(PROMPTS)})"
    )
    parser.add_argument(
        "--writers", action="store_true", help="the three writers instead of the built-in profiles"
    )
    parser.add_argument("--writer-adapter", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--adapters", default=None, help="built-in profiles: adapters in DIR/<profile>/")
    parser.add_argument(
        "--backend",
        choices=["local", "builtin"],
        default="local",
        help="builtin: the template composer (no model, no adapters; seconds)",
    )
    parser.add_argument("--voices", nargs="+", default=None, help="only these profiles or writers")
    parser.add_argument("--variants", nargs="+", default=["planned", "carried"], choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/carry_gaps_builtin.json"))
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        parser.error(f"--prompts must be 1..{len(PROMPTS)}")
    if args.backend == "builtin" and (args.writer_adapter or args.adapters):
        parser.error("the builtin backend drafts without adapters")
    if any("=" not in item for item in args.writer_adapter):
        parser.error("--writer-adapter takes NAME=DIR")
    torch.set_num_threads(1)
    everyone = voices(args)
    profiles = {name: target for name, (target, _, _) in everyone.items()}
    unknown = set(args.voices or ()) - set(everyone)
    if unknown:
        parser.error(f"--voices: unknown {sorted(unknown)}; choose from {sorted(everyone)}")
    chosen = {name: v for name, v in everyone.items() if args.voices is None or name in args.voices}
    attribute = None
    if args.writers:
        from resonance_os.voice.stylometry import attribute
    writers = {v: HumanResonantWriter(backend=args.backend, **VARIANTS[v]) for v in args.variants}
    rows: list[dict] = []
    for i, prompt in enumerate(PROMPTS[: args.prompts]):
        for name, (target, adapter, source) in chosen.items():
            for variant, writer in writers.items():
                t0 = time.perf_counter()
                article = writer.generate(prompt, target, seed=i, target_source=source, adapter=adapter)
                hrv = article.measured_hrv["article"]
                row = {
                    "voice": name, "prompt": prompt, "variant": variant, "backend": article.backend,
                    "gap": mean_gap(target, hrv), "nearest": nearest_profile(article.text, profiles).name,
                    "fluency": article.score.fluency, "topic": article.score.topic,
                    "seconds": round(time.perf_counter() - t0), "text": article.text,
                    "steer": [e.get("steer") for e in article.trace if e["layer"] == "llm"],
                }  # fmt: skip
                if attribute is not None:
                    row["attributed"] = attribute(article.text).writer
                rows.append(row)
                print(
                    f"{name:12s} {variant:7s} gap {row['gap']:.3f} {row['seconds']:4d} s  {prompt}",
                    flush=True,
                )
                args.out.write_text(
                    json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1)
                )
    table = {
        name: {v: summary([r for r in rows if r["voice"] == name], v, args.writers) for v in args.variants}
        for name in chosen
    } | {"all": {v: summary(rows, v, args.writers) for v in args.variants}}
    for name, by_variant in table.items():
        for variant, s in by_variant.items():
            extra = f" stylometric {s['stylometric']}/{s['articles']}" if args.writers else ""
            print(
                f"{name:12s} {variant:7s} mean |gap| {s['mean_gap']:.3f} nearest own {s['nearest_own']}/"
                f"{s['articles']} fluency {s['fluency']:.3f} topic {s['topic']:.3f}{extra}"
            )
    first = args.variants[0]
    ratio = {v: table["all"][v]["mean_gap"] / table["all"][first]["mean_gap"] for v in args.variants[1:]}
    for variant, value in ratio.items():
        print(f"mean |gap| {variant} / {first}: {value:.3f}")
    args.out.write_text(
        json.dumps(
            {"args": vars(args) | {"out": str(args.out)}, "table": table, "ratio": ratio, "rows": rows},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
