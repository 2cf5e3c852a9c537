"""Does the reward know good writing? Original vs damaged held-out paragraphs, term by term.

For every held-out real paragraph (``quality.corpus`` split "heldout": pydoc prose and fortunes
with at least 3 sentences and 40 words, in their real order; nothing here was used to fit or tune
a term) and every built-in profile as the target, the paragraph is scored against five damaged
versions of itself:

* word salad (all words shuffled), within-sentence shuffle, sentence-order shuffle
  (``quality.damage``);
* template: today's built-in composer writing one paragraph toward the paragraph's own measured
  HRV, about the paragraph's prompt (``HumanResonantWriter(backend="builtin")``);
* off-topic: another held-out paragraph, scored with this paragraph's prompt.

A paragraph's prompt is its three most distinctive content words (tf-idf against the training
documents). The table gives the paired AUC, P(score(original) > score(damaged)) with ties counting
half, for the combined reward, each term alone, and plain resonance (the old reward). A second
table checks that style does not swamp writing: each paragraph is edited toward the profile by the
refiner (``RefinerLayer.refine_to_target``: its HRV-matched rewrite); where the rewrite is equally
fluent (n-gram fluency within 0.03), the two rewards should lie within 0.05. Last, the cost per
paragraph of each term (each timed on its own share of paragraphs from the other split, never scored
before in the run, so no cache answers), and HRWritingEnv steps per CPU-second with the combined
reward.

    .venv/bin/python benchmarks/bench_reward.py [--paragraphs 200] [--model lm]
    .venv/bin/python benchmarks/bench_reward.py --order-domains 40 [--model lm] [--baseline REV]
    .venv/bin/python benchmarks/bench_reward.py --model lm --cost-only --timed 12
    .venv/bin/python benchmarks/bench_reward.py --model-prose [--baseline REV]

``--order-domains N``: only the order table, this build's coherence beside the coherence of git
revision ``--baseline`` (its ``quality/data/coherence.json``; with ``--model lm`` also the reader
before the trained one, ``LMCoherence(reader="likelihood")``), in one run: for N held-out paragraphs
of each domain (pydoc and fortunes; history, essays and a book teaching a programming language from
``build/order_corpus``, built by ``scripts/build_order_corpus.py``, when present), the paired AUC of
the reward (professional profile, the paragraph's prompt) against its sentence-order shuffle, word
salad and within-sentence shuffle, and the CPU time per paragraph of each reward on the same texts
(each reward times its own share of paragraphs from the training split) with their ratio.

``--model-prose``: the SmolLM2 paragraphs that ``bench_voice_adapters.py`` recorded in
``benchmarks/results/voice_adapters_*.json``, each against its sentence-order shuffle and against as
many sentences from other paragraphs on the same prompt and on other prompts (fluent one by one,
no paragraph together): the
paired AUC of the fast reward, its coherence and its fluency, this build beside ``--baseline``'s.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from _corpus import document_paragraphs, fortune_entries, pydoc_paragraphs  # noqa: E402
from bench_hr_learning import env_speed  # noqa: E402

from resonance_os.core.text import sentence_texts  # noqa: E402
from resonance_os.generation.human_resonant_writer import HumanResonantWriter  # noqa: E402
from resonance_os.profiles.templates import BUILTIN_TEMPLATES  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402
from resonance_os.quality import damage  # noqa: E402
from resonance_os.quality.reward import WritingReward, WritingScore  # noqa: E402
from resonance_os.quality.text_units import content_stems, is_content, sentence_words, stem  # noqa: E402

DAMAGES = ("word salad", "within-sentence shuffle", "sentence-order shuffle", "template", "off-topic")
COLUMNS = ("reward", "resonance", "fluency", "coherence", "topic", "1-repetition")


def prompt_maker():
    """A function giving a paragraph's three most distinctive content words (tf-idf vs training docs)."""
    train = pydoc_paragraphs("train") + fortune_entries("train")
    df = Counter(s for doc in train for s in {st for ws in sentence_words(doc) for st in content_stems(ws)})
    n = len(train)

    def prompt(text: str) -> str:
        tf: Counter[str] = Counter()
        surface: dict[str, str] = {}
        for word in (w for ws in sentence_words(text) for w in ws):
            if is_content(word):
                tf[stem(word)] += 1
                surface.setdefault(stem(word), word)
        best = sorted(tf, key=lambda s: (-tf[s] * math.log(n / (1 + df.get(s, 0))), s))[:3]
        return " ".join(surface[s] for s in best)

    return prompt


def real_paragraphs(n: int, split: str) -> list[str]:
    pydoc = document_paragraphs(pydoc_paragraphs(split))
    fortunes = document_paragraphs(fortune_entries(split))
    random.Random(0).shuffle(fortunes)
    return (pydoc + fortunes)[:n]


def damaged_versions(paragraphs, prompts, hrvs, writer) -> list[dict[str, str]]:
    out = []
    for i, (text, prompt, hrv) in enumerate(zip(paragraphs, prompts, hrvs)):
        article = writer.generate(prompt, target_hrv=hrv, num_paragraphs=1, seed=i)
        other = paragraphs[(i + len(paragraphs) // 2) % len(paragraphs)]
        out.append(
            {
                "word salad": damage.word_salad(text, seed=i),
                "within-sentence shuffle": damage.shuffle_within_sentences(text, seed=i),
                "sentence-order shuffle": damage.shuffle_sentences(text, seed=i),
                "template": article.paragraphs[0],
                "off-topic": other,
            }
        )
    return out


class Terms:
    """Each (text, prompt)'s writing score, computed once: the quality terms do not depend on the
    target, so a profile only changes the style term (``resonance``) and the product."""

    def __init__(self, reward: WritingReward) -> None:
        self.reward = reward
        self._scores: dict[tuple[str, str], WritingScore] = {}

    def __call__(self, text: str, target: list[float], prompt: str) -> dict[str, float]:
        scored = self._scores.get((text, prompt))
        if scored is None:
            scored = self._scores[text, prompt] = self.reward.score(text, target, prompt=prompt)
        resonance = 1.0 - float(np.mean(np.abs(np.subtract(scored.hrv, target))))
        return {
            "reward": resonance * scored.quality,
            "resonance": resonance,
            "fluency": scored.fluency,
            "coherence": scored.coherence,
            "topic": scored.topic,
            "1-repetition": 1.0 - scored.repetition,
        }


def style_vs_writing(terms: Terms, writer, paragraphs: list[str], prompts: list[str]) -> None:
    print("\nStyle does not swamp writing: the refiner's HRV-matched rewrite, where equally fluent:\n")
    print(
        "| profile | equally fluent rewrites | mean gap before -> after | mean reward change | share within 0.05 |"
    )
    print("|---|---:|---|---:|---:|")
    for profile in BUILTIN_TEMPLATES.values():
        target = profile.vector.to_list()
        gaps, changes = [], []
        for i, (text, prompt) in enumerate(zip(paragraphs, prompts)):
            rewrite = writer.refiner.refine_to_target(text, target, seed=i).text
            before, after = terms(text, target, prompt), terms(rewrite, target, prompt)
            if abs(after["fluency"] - before["fluency"]) <= 0.03:
                gaps.append((1.0 - before["resonance"], 1.0 - after["resonance"]))
                changes.append(after["reward"] - before["reward"])
        if not changes:
            print(f"| {profile.name} | 0 of {len(paragraphs)} | - | - | - |")
            continue
        (gap_before, gap_after), changes_arr = np.mean(gaps, axis=0), np.array(changes)
        print(
            f"| {profile.name} | {len(changes)} of {len(paragraphs)} | {gap_before:.3f} -> {gap_after:.3f} | "
            f"{changes_arr.mean():+.3f} | {np.mean(np.abs(changes_arr) <= 0.05):.2f} |"
        )


def auc(pairs: list[tuple[float, float]]) -> float:
    return float(np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs]))


def cost_table(model: str, paragraphs: list[str], prompts: list[str], target) -> None:
    """CPU time per paragraph of each term and of the combined reward, each row on its own share of
    ``paragraphs``, which nothing in this process scored before (the terms remember sentences and
    texts they have seen, so a text timed twice would be timed from memory)."""
    from resonance_os.quality.repetition import repetition_report
    from resonance_os.quality.topic import topic_model

    reward = WritingReward(model=model)
    jobs = {
        "HRV extraction (resonance)": lambda t, p: reward.extractor.extract(t),
        f"fluency ({type(reward.fluency_model).__name__})": lambda t, p: reward.fluency_model.score(t),
        f"coherence ({type(reward.coherence_model).__name__})": lambda t, p: reward.coherence_model.score(t),
        "topic": lambda t, p: topic_model().score(t, p),
        "repetition": lambda t, p: repetition_report(t, p),
        "combined reward (all of the above)": lambda t, p: reward.score(t, target, prompt=p),
    }
    print("\n| term | µs per paragraph (CPU) |\n|---|---:|")
    for k, (name, job) in enumerate(jobs.items()):
        texts, asked = paragraphs[k :: len(jobs)], prompts[k :: len(jobs)]
        start = time.process_time()
        for text, prompt in zip(texts, asked):
            job(text, prompt)
        print(f"| {name} | {(time.process_time() - start) / len(texts) * 1e6:,.0f} |")


ORDER_DAMAGES = ("sentence-order shuffle", "word salad", "within-sentence shuffle")
ORDER_BOOKS = Path(__file__).resolve().parents[1] / "build" / "order_corpus"
BASELINE = "c51c2b7"
"""The last commit before the order readers were trained on books."""


def domain_paragraphs(n: int, split: str) -> dict[str, list[str]]:
    """Up to ``n`` real paragraphs (3+ sentences, 40+ words) of each held-out domain, seeded."""
    from resonance_os.quality.corpus import order_corpus

    pools = {
        "pydoc": document_paragraphs(pydoc_paragraphs(split)),
        "fortunes": document_paragraphs(fortune_entries(split)),
    }
    if (ORDER_BOOKS / f"{split}.jsonl").is_file():
        for row in order_corpus(ORDER_BOOKS, split):
            pools.setdefault(row["domain"], []).append(row["text"])
    else:
        print(f"(no {ORDER_BOOKS}: book domains skipped; scripts/build_order_corpus.py builds them)")
    out = {}
    for name, pool in pools.items():
        pool = [p for p in pool if damage.shuffle_sentences(p) is not None]
        out[name] = random.Random(0).sample(pool, min(n, len(pool)))
    return out


def baseline_coherence(model: str, revision: str):
    """The coherence term as it was at git ``revision`` (its shipped feature weights; for ``lm`` the
    likelihood reader, the only one then)."""
    import json
    import subprocess

    from resonance_os.quality.coherence import CoherenceModel, LMCoherence

    path = "src/resonance_os/quality/data/coherence.json"
    data = subprocess.run(
        ["git", "show", f"{revision}:{path}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    fast = CoherenceModel.from_json(json.loads(data))
    return fast if model == "fast" else LMCoherence(reader="likelihood", fast=fast)


def order_table(model: str, n: int, revision: str, timed_paragraphs: int) -> None:
    """The order table of ``--order-domains`` (module docstring); ``n`` 0: the cost lines only."""
    target = BUILTIN_TEMPLATES["professional"].vector.to_list()
    extractor = HRVExtractor()
    rewards = {
        f"baseline {revision}": WritingReward(
            model=model, extractor=extractor, coherence=baseline_coherence(model, revision)
        ),
        "this build": WritingReward(model=model, extractor=extractor),
    }
    make_prompt = prompt_maker()
    print(
        f"Order table, WritingReward(model={model!r}), professional profile, paired AUC original > damaged:\n"
    )
    print("| domain | n | damage | " + " | ".join(f"reward {k} | coherence {k}" for k in rewards) + " |")
    print("|---|---:|---|" + "---:|---:|" * len(rewards))
    for domain, texts in (domain_paragraphs(n, "heldout") if n else {}).items():
        cells: dict[str, dict[str, list]] = {d: {} for d in ORDER_DAMAGES}
        for name, reward in rewards.items():
            for i, text in enumerate(texts):
                prompt = make_prompt(text)
                real = reward.score(text, target, prompt=prompt)
                damaged = {
                    "sentence-order shuffle": damage.shuffle_sentences(text, seed=i),
                    "word salad": damage.word_salad(text, seed=i),
                    "within-sentence shuffle": damage.shuffle_within_sentences(text, seed=i),
                }
                for kind, other in damaged.items():
                    got = reward.score(other, target, prompt=prompt)
                    pairs = cells[kind].setdefault(name, [])
                    pairs.append(((real.reward, got.reward), (real.coherence, got.coherence)))
        for kind in ORDER_DAMAGES:
            row = []
            for name in rewards:
                pairs = cells[kind][name]
                row += [auc([p[0] for p in pairs]), auc([p[1] for p in pairs])]
            print(f"| {domain} | {len(texts)} | {kind} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    timed = real_paragraphs(timed_paragraphs or (600 if model == "fast" else 16), "train")
    prompts = [make_prompt(p) for p in timed]
    costs = {}
    for k, (name, reward) in enumerate(rewards.items()):
        share = list(zip(timed[k :: len(rewards)], prompts[k :: len(rewards)]))
        start = time.process_time()
        for text, prompt in share:
            reward.score(text, target, prompt=prompt)
        costs[name] = (time.process_time() - start) / len(share)
    base, new = costs.values()
    print(
        "\nCPU time per paragraph (each on its own training paragraphs): "
        + ", ".join(f"{k} {v * 1e3:,.1f} ms" for k, v in costs.items())
        + f"; ratio this build / baseline {new / base:.2f}"
    )


MODEL_PROSE = sorted((Path(__file__).resolve().parent / "results").glob("voice_adapters_*.json"))
"""SmolLM2's articles as ``bench_voice_adapters.py`` recorded them (built-in profiles, held-out prompts,
with and without voice adapters): model prose the reward never saw."""


def model_paragraphs(files: list[Path]) -> list[tuple[str, str]]:
    """``(prompt, paragraph)`` of every paragraph with 3+ sentences in the articles of ``files``."""
    import json

    out = []
    for path in files:
        for row in json.loads(path.read_text("utf-8"))["rows"]:
            for paragraph in row["text"].split("\n\n"):
                if len(sentence_texts(paragraph)) >= 3:
                    out.append((row["prompt"], paragraph.strip()))
    return out


def model_prose_table(revision: str, files: list[Path]) -> None:
    """``--model-prose``: does the fast reward rate shuffled or incoherent model prose below the model's
    own paragraphs? Each SmolLM2 paragraph against its sentence-order shuffle and against as many
    sentences drawn from other paragraphs on the same prompt (on topic, each fluent, together no
    paragraph) and on other prompts (unconnected); paired
    AUC and means of the reward, coherence and fluency, baseline beside this build."""
    paragraphs = model_paragraphs(files)
    if not paragraphs:
        raise SystemExit(f"no recorded articles in {', '.join(map(str, files)) or 'benchmarks/results'}")
    target = BUILTIN_TEMPLATES["professional"].vector.to_list()
    extractor = HRVExtractor()
    rewards = {
        f"baseline {revision}": WritingReward(
            extractor=extractor, coherence=baseline_coherence("fast", revision)
        ),
        "this build": WritingReward(extractor=extractor),
    }
    rng = random.Random(0)
    damaged: dict[str, list[tuple[str, str, str]]] = {
        "sentence-order shuffle": [],
        "same prompt, other paragraphs' sentences": [],
        "other prompts' sentences": [],
    }
    for i, (prompt, text) in enumerate(paragraphs):
        shuffled = damage.shuffle_sentences(text, seed=i)
        if shuffled is not None:
            damaged["sentence-order shuffle"].append((prompt, text, shuffled))
        count = len(sentence_texts(text))
        same = [s for q, t in paragraphs if q == prompt and t != text for s in sentence_texts(t)]
        if len(same) >= count:
            damaged["same prompt, other paragraphs' sentences"].append(
                (prompt, text, " ".join(rng.sample(same, count)))
            )
        others = [s for q, t in paragraphs if q != prompt for s in sentence_texts(t)]
        damaged["other prompts' sentences"].append((prompt, text, " ".join(rng.sample(others, count))))
    terms = ("reward", "coherence", "fluency")
    print(
        f"Model prose: {len(paragraphs)} SmolLM2 paragraphs (3+ sentences) of {len(files)} recorded runs; "
        "paired AUC P(term(paragraph) > term(damaged)), (mean paragraph / mean damaged):\n"
    )
    print("| damage | pairs | " + " | ".join(f"{t} {k}" for k in rewards for t in terms) + " |")
    print("|---|---:|" + "---:|" * len(terms) * len(rewards))
    scores = [Terms(reward) for reward in rewards.values()]
    for kind, triples in damaged.items():
        cells = []
        for scored in scores:
            for term in terms:
                pairs = [(scored(a, target, p)[term], scored(b, target, p)[term]) for p, a, b in triples]
                means = np.mean(pairs, axis=0)
                cells.append(f"{auc(pairs):.3f} ({means[0]:.3f} / {means[1]:.3f})")
        print(f"| {kind} | {len(triples)} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paragraphs", type=int, default=200)
    parser.add_argument(
        "--model",
        choices=("fast", "lm"),
        default="fast",
        help="the reward's models (WritingReward(model=...))",
    )
    parser.add_argument(
        "--split",
        choices=("heldout", "train"),
        default="heldout",
        help="heldout for the figures; train only to choose the reward's weights",
    )
    parser.add_argument(
        "--order-domains",
        type=int,
        default=0,
        metavar="N",
        help="only the order table, N paragraphs per domain",
    )
    parser.add_argument(
        "--baseline",
        default=BASELINE,
        help="git revision whose coherence the order table and --model-prose compare",
    )
    parser.add_argument("--cost-only", action="store_true", help="the order table's cost lines only")
    parser.add_argument(
        "--timed", type=int, default=0, help="paragraphs the order table times (both rewards)"
    )
    parser.add_argument(
        "--model-prose",
        action="store_true",
        help="only the model-prose check (SmolLM2 articles recorded in benchmarks/results)",
    )
    args = parser.parse_args()
    if args.model_prose:
        model_prose_table(args.baseline, MODEL_PROSE)
        return
    if args.order_domains or args.cost_only:
        order_table(args.model, 0 if args.cost_only else args.order_domains, args.baseline, args.timed)
        return
    paragraphs = real_paragraphs(args.paragraphs, args.split)
    make_prompt = prompt_maker()
    prompts = [make_prompt(p) for p in paragraphs]
    extractor = HRVExtractor()
    hrvs = [extractor.extract(p) for p in paragraphs]
    writer = HumanResonantWriter(backend="builtin", extractor=extractor)
    damaged = damaged_versions(paragraphs, prompts, hrvs, writer)
    reward = WritingReward(model=args.model, extractor=extractor)
    terms = Terms(reward)
    print(
        f"{len(paragraphs)} {args.split} paragraphs (pydoc + fortunes), 3 built-in profiles,"
        f" WritingReward(model={args.model!r})\n"
    )
    print("Paired AUC, P(original > damaged):\n")
    print("| profile | damage | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---:|" * len(COLUMNS))
    for profile in BUILTIN_TEMPLATES.values():
        target = profile.vector.to_list()
        originals = [terms(p, target, q) for p, q in zip(paragraphs, prompts)]
        for name in DAMAGES:
            rows = [
                (orig, terms(d[name], target, q))
                for orig, d, q in zip(originals, damaged, prompts)
                if d[name] is not None
            ]
            cells = [auc([(a[c], b[c]) for a, b in rows]) for c in COLUMNS]
            print(f"| {profile.name} | {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    style_vs_writing(terms, writer, paragraphs, prompts)
    timed = real_paragraphs(
        600 if args.model == "fast" else 30, "train" if args.split == "heldout" else "heldout"
    )
    cost_table(
        args.model, timed, [make_prompt(p) for p in timed], BUILTIN_TEMPLATES["professional"].vector.to_list()
    )
    if args.model == "fast":
        print(f"\nHRWritingEnv with the combined reward: {env_speed():,.0f} steps per CPU-second")


if __name__ == "__main__":
    main()
