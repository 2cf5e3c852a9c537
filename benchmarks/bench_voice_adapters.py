"""Voice adapters (issue 41): the writer's articles toward each built-in profile with and without the
profile's adapter, side by side on held-out prompts.

For each built-in profile with a shipped adapter and each of ``--prompts`` held-out topics (the draft
pool's ``heldout`` split, never trained on: ``evolution.hr_grpo.heldout_prompts``), the default writer
(local SmolLM2, 6 candidates a paragraph, the refiner) writes a ``--paragraphs``-paragraph article with
the same seed twice: ``adapter=False`` (the bare model) and ``adapter=True`` (the profile's adapter
drafts). Per variant and profile: the article's mean |gap| to its profile (goal <= 0.06), how often
the article measures nearest its own profile of the three (goal >= 90%), the fast writing reward's
fluency / coherence / topic, the LM reward's fluency and topic (``WritingReward(model="lm")``), the
judge neither reward nor writer reads (``quality.judge``: calibrated fluency under Gemma-3-270M;
"judged" = the adapter article's over the bare model's on the same prompt, 1.0 = as fluent) and
seconds per article. Writes every article to ``--out`` (JSON) for reading. ``--adapters DIR`` drafts
"with" by ``DIR/<profile>/`` (``scripts/build_profile_adapters.py --out DIR``) instead of the shipped
adapter: a new build measured against the bare model before it ships.

    .venv/bin/python benchmarks/bench_voice_adapters.py [--prompts 3] [--profiles professional technical creative] [--adapters DIR]
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

from resonance_os.core.hrv_types import mean_gap  # noqa: E402
from resonance_os.evolution.hr_grpo import heldout_prompts  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.generation.voice_adapter import find_adapter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.quality.judge import fluency_judge  # noqa: E402
from resonance_os.quality.reward import WritingReward  # noqa: E402

VARIANTS = ("without", "with")


def nearest_profile(measured: list[float]) -> str:
    return min(
        BUILTIN_TEMPLATES, key=lambda name: mean_gap(BUILTIN_TEMPLATES[name].vector.to_list(), measured)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--profiles", nargs="+", default=list(BUILTIN_TEMPLATES), choices=list(BUILTIN_TEMPLATES)
    )
    parser.add_argument("--prompts", type=int, default=3, help="held-out topics per profile")
    parser.add_argument("--paragraphs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-lm", action="store_true", help="skip the LM reward (seconds a paragraph)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "voice_adapters.json"))
    parser.add_argument(
        "--adapters", default=None, help="draft 'with' by DIR/<profile>/ instead of the shipped adapters"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)
    if args.adapters:
        missing = [p for p in args.profiles if not (Path(args.adapters) / p).is_dir()]
    else:
        missing = [p for p in args.profiles if find_adapter(f"builtin/{p}") is None]
    if missing:
        parser.error(f"no adapter for {missing}; build them: scripts/build_profile_adapters.py")
    bare_writer = HumanResonantWriter(adapter=False)
    shipped = None if args.adapters else HumanResonantWriter(adapter=True)
    lm_reward = None if args.no_lm else WritingReward(model="lm")
    judge = fluency_judge()
    # each profile gets its own held-out topics (by its place among the built-ins, so one profile run
    # alone writes about the same topics as in a run of all three)
    topics = heldout_prompts()
    rows: list[dict] = []
    t_start = time.perf_counter()
    for name in args.profiles:
        p_index = list(BUILTIN_TEMPLATES).index(name)
        key = f"builtin/{name}"
        target = BUILTIN_TEMPLATES[name].vector.to_list()
        adapted = shipped or HumanResonantWriter(adapter=str(Path(args.adapters) / name))
        writers = {"without": bare_writer, "with": adapted}
        for i in range(args.prompts):
            prompt = topics[(p_index * args.prompts + i) % len(topics)]
            for variant in VARIANTS:
                t0 = time.perf_counter()
                article = writers[variant].generate(
                    prompt,
                    target,
                    num_paragraphs=args.paragraphs,
                    seed=args.seed + i,
                    target_source=f"profile {key}",
                )
                seconds = time.perf_counter() - t0
                measured = article.measured_hrv["article"]
                row = {
                    "profile": name, "prompt": prompt, "variant": variant, "backend": article.backend,
                    "gap": article.mean_absolute_error, "nearest": nearest_profile(measured),
                    "fluency": article.score.fluency, "coherence": article.score.coherence,
                    "topic": article.score.topic, "reward": article.score.reward, "seconds": seconds,
                    "text": article.text, "measured": measured,
                }  # fmt: skip
                if lm_reward is not None:
                    lm = lm_reward.score(article.text, target, prompt=prompt)
                    row.update(lm_fluency=lm.fluency, lm_coherence=lm.coherence, lm_topic=lm.topic)
                row["judge"] = judge.score(article.text)
                bare = rows[-1]["judge"] if variant == "with" else row["judge"]
                row["judged"] = row["judge"] / bare if bare else float("nan")
                rows.append(row)
                print(f"{name:12s} {variant:7s} gap {row['gap']:.3f} nearest {row['nearest']:12s} "
                      f"fluency {row['fluency']:.3f} judge {row['judge']:.3f} {seconds:.0f} s  {prompt}", flush=True)  # fmt: skip

    load = os.getloadavg()[0]
    print(f"\nVoice adapters, {len(args.profiles)} profiles x {args.prompts} held-out prompts x "
          f"{args.paragraphs} paragraphs, seed {args.seed}, {args.threads} thread(s), load {load:.1f}, "
          f"{time.perf_counter() - t_start:.0f} s\n")  # fmt: skip
    terms = ["gap", "fluency", "coherence", "topic", "reward", "judge", "judged", "seconds"]
    if lm_reward is not None:
        terms[5:5] = ["lm_fluency", "lm_topic"]
    print(
        "| profile | adapter | "
        + " | ".join(["mean |gap|" if t == "gap" else t for t in terms])
        + " | nearest own |"
    )
    print("|---|---|" + "---:|" * (len(terms) + 1))
    for name in [*args.profiles, "all"]:
        for variant in VARIANTS:
            sel = [r for r in rows if r["variant"] == variant and name in (r["profile"], "all")]
            own = sum(r["nearest"] == r["profile"] for r in sel)
            cells = [f"{statistics.mean(r[t] for r in sel):.3f}" if t != "seconds" else
                     f"{statistics.mean(r[t] for r in sel):.0f}" for t in terms]  # fmt: skip
            print(f"| {name} | {variant} | " + " | ".join(cells) + f" | {own}/{len(sel)} |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "load": load, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
