"""The local writer's decoding: SmolLM2's penalties on repeated tokens, side by side.

CTRL's repetition penalty (``LocalBackend(repetition_penalty=...)``, as transformers' ``generate``)
divides the logit of every token already in the prompt or the reply. The writer's prompt names the
topic, so the penalty also pushes the model away from the words of the topic it was asked to write
about; OpenAI's presence penalty (``presence_penalty``) counts the reply's own tokens only. For each of
``bench_voice.PROMPTS`` (held out) and each built-in profile's target, the writer without voice
adapters (the base model drafts, as for a custom target or a profile with no adapter) writes a
3-paragraph article once per ``--decodings`` entry (``LocalBackend`` settings, ``name=value,...``;
the first is the baseline), same seed, and the table gives per decoding:

    mean |gap|     the article's mean |gap| to its target (8 dimensions)
    nearest own    articles that measure nearest their own profile of the three
    fluency/topic  the fast writing reward's terms for the article; repetition its repeated-phrase share
    reward         the fast writing reward of the article
    repeating      share of sentences that use one word of 4+ letters twice ("noble and noble")
    judged         calibrated fluency under Gemma-3-270M (``quality.judge``), which neither the writer
                   nor the reward reads (with ``--judge``)

and each decoding's ratio to the first on topic and judged fluency. Every article goes to ``--out``.

    OMP_NUM_THREADS=1 .venv/bin/python -W ignore benchmarks/bench_local_decoding.py --judge
    OMP_NUM_THREADS=1 .venv/bin/python -W ignore benchmarks/bench_local_decoding.py --judge \\
        --decodings repetition_penalty=1.0 presence_penalty=1.5 --out benchmarks/results/local_decoding_presence.json
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from bench_voice import PROMPTS  # noqa: E402

from resonance_os.generation.backends.local import LocalBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.voice.profile_match import nearest_profile  # noqa: E402

TERMS = ("gap", "fluency", "topic", "repetition", "reward", "repeating", "judged", "seconds")
SETTINGS = {"repetition_penalty": (1.0, 2.0), "presence_penalty": (0.0, 2.0), "no_repeat_ngram_size": (0, 8)}
"""The ``LocalBackend`` settings a decoding may name, with their allowed ranges."""


def decoding(text: str) -> dict[str, float]:
    """``"repetition_penalty=1.0,presence_penalty=1.5"`` -> ``LocalBackend`` keyword arguments (the
    others keep the backend's defaults); bad input is argparse's usage error, naming the fix."""
    out: dict[str, float] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in SETTINGS or not value:
            raise argparse.ArgumentTypeError(f"{item!r}: give name=value with name one of {sorted(SETTINGS)}")
        number = int(value) if name == "no_repeat_ngram_size" else float(value)
        low, high = SETTINGS[name]
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{name} must be in [{low}, {high}], got {value}")
        out[name] = number
    return out


def repeating(text: str) -> float:
    """Share of the text's sentences that use one word of 4+ letters twice ("noble and noble")."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    doubled = 0
    for sentence in sentences:
        words = [w for w in re.findall(r"[a-z']+", sentence.lower()) if len(w) > 3]
        doubled += len(words) != len(set(words))
    return doubled / max(len(sentences), 1)


def summary(rows: list[dict]) -> dict:
    out = {term: statistics.fmean(r[term] for r in rows) for term in TERMS if term in rows[0]}
    return out | {"articles": len(rows), "nearest_own": sum(r["nearest"] == r["voice"] for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--decodings",
        nargs="+",
        type=decoding,
        default=[{"repetition_penalty": 1.15}, {"repetition_penalty": 1.0}],
        help="LocalBackend settings per variant, name=value[,name=value]; the first is the baseline",
    )
    parser.add_argument(
        "--prompts", type=int, default=len(PROMPTS), help=f"held-out prompts (<= {len(PROMPTS)})"
    )
    parser.add_argument("--judge", action="store_true", help="also judge fluency with Gemma-3-270M")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/local_decoding.json"))
    args = parser.parse_args()
    if not 1 <= args.prompts <= len(PROMPTS):
        parser.error(f"--prompts must be 1..{len(PROMPTS)}")
    torch.set_num_threads(1)
    base = LocalBackend()
    writers = {
        ",".join(f"{k}={v}" for k, v in settings.items()): HumanResonantWriter(
            backend=LocalBackend(model=(base.tokenizer, base.model), **settings), adapter=False
        )
        for settings in args.decodings
    }
    judge = None
    if args.judge:
        from resonance_os.quality.judge import fluency_judge

        judge = fluency_judge()
    profiles = {name: t.vector.to_list() for name, t in BUILTIN_TEMPLATES.items()}
    rows: list[dict] = []

    def save(**extra: object) -> None:
        body = {"args": vars(args) | {"out": str(args.out)}, **extra, "rows": rows}
        args.out.write_text(json.dumps(body, indent=1))

    for i, prompt in enumerate(PROMPTS[: args.prompts]):
        for name, target in profiles.items():
            for variant, writer in writers.items():
                t0 = time.perf_counter()
                article = writer.generate(prompt, target, seed=i, target_source=f"profile builtin/{name}")
                row = {
                    "voice": name, "prompt": prompt, "decoding": variant, "gap": article.mean_absolute_error,
                    "nearest": nearest_profile(article.text, profiles).name, "fluency": article.score.fluency,
                    "topic": article.score.topic, "repetition": article.score.repetition,
                    "reward": article.score.reward, "repeating": repeating(article.text),
                    "seconds": round(time.perf_counter() - t0, 1),
                }  # fmt: skip
                if judge is not None:
                    row["judged"] = judge.score(article.text)
                rows.append(row | {"text": article.text})
                print(
                    f"{name:12s} {variant} gap {row['gap']:.3f} topic {row['topic']:.3f} "
                    f"fluency {row['fluency']:.3f} {row['seconds']:5.1f} s  {prompt}",
                    flush=True,
                )
                save()
    table = {
        v: {"all": summary([r for r in rows if r["decoding"] == v])}
        | {name: summary([r for r in rows if r["decoding"] == v and r["voice"] == name]) for name in profiles}
        for v in writers
    }
    baseline = next(iter(writers))
    for variant, by_voice in table.items():
        for voice, s in by_voice.items():
            judged = f" judged {s['judged']:.3f}" if "judged" in s else ""
            print(
                f"{variant} {voice:12s} mean |gap| {s['gap']:.3f} nearest own {s['nearest_own']}/"
                f"{s['articles']} fluency {s['fluency']:.3f} topic {s['topic']:.3f} repetition "
                f"{s['repetition']:.3f} repeating {s['repeating']:.3f} reward {s['reward']:.3f}{judged}"
            )
    first = table[baseline]["all"]
    ratios = {
        variant: {term: by_voice["all"][term] / first[term] for term in ("topic", "judged") if term in first}
        for variant, by_voice in list(table.items())[1:]
    }
    for variant, r in ratios.items():
        print(f"{variant} / {baseline}: " + ", ".join(f"{k} {v:.3f}x" for k, v in r.items()))
    save(table=table, ratios=ratios)


if __name__ == "__main__":
    main()
