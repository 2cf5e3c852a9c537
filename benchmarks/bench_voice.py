"""Voice check (issue 41): is text attributed to the voice it was written in, by two independent rules?

Two attributions side by side: the stylometric classifier (``voice.stylometry``: character 2-4-gram
TF-IDF + logistic regression, fitted on the writers' train books) and the HRV nearest-profile rule
(``voice.profile_match``: nearest by mean |gap| to each writer's profile measured on its train books).

1. Real text (``--parts real``): each writer's HELD-OUT books (no paragraph of them was fitted on),
   attributed one paragraph at a time and as 3-paragraph passages (an article's length), with chance.
2. Generated text (``--generated DIR``, ``DIR/<writer>/*.txt``, one article a file; or
   :func:`report_generated` called with ``{writer: [texts]}``): both attributions per writer, and the
   largest share of an article's word 8-grams found verbatim in that writer's train paragraphs (a
   classifier fitted on those paragraphs would reward copying them).
3. Built-in profiles (``--parts builtin``): ``--prompts`` held-out prompts x the 3 built-in profiles,
   3-paragraph articles by the local SmolLM2 writer (``HumanResonantWriter(backend="local")``, fixed
   seeds); per profile the mean |gap| of the article to its profile and how often the article measures
   nearest its own profile of the three; and which writer the classifier says each article reads like.
   ``--adapters on`` writes with the profiles' voice adapters (see ``write_builtin_articles``).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_voice.py --parts real
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_voice.py --parts builtin --prompts 3 --adapters off \\
        --save runs/voice_builtin      # then --builtin-from runs/voice_builtin re-measures them
    .venv/bin/python benchmarks/bench_voice.py --parts real --generated runs/writer_articles
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402
from resonance_os.voice.corpora import WRITERS, load_writer, load_writer_records  # noqa: E402
from resonance_os.voice.profile_match import match_hrv, writer_profiles  # noqa: E402
from resonance_os.voice.stylometry import StylometricClassifier, default_classifier  # noqa: E402

PASSAGE = 3
"""Paragraphs per held-out passage: the writer's articles are 3 paragraphs."""
NGRAM = 8
PROMPTS = [
    "a winter morning at the harbour",
    "choosing a bicycle for commuting",
    "what a town loses when its cinema closes",
    "keeping bees on a city roof",
    "the first week at a new job",
    "why people collect old maps",
]
"""Held-out prompts for the built-in-profile articles: none is among bench_writer's training prompts."""


def passages(name: str, split: str = "heldout") -> list[str]:
    """Consecutive ``PASSAGE``-paragraph passages of one book each."""
    records = load_writer_records(name, split)  # type: ignore[arg-type]
    return [
        "\n\n".join(r.text for r in records[i : i + PASSAGE])
        for i in range(0, len(records) - PASSAGE + 1, PASSAGE)
        if records[i].book == records[i + PASSAGE - 1].book
    ]


def attribution_rates(
    texts_by_writer: Mapping[str, Sequence[str]], classifier: StylometricClassifier, extractor: HRVExtractor
) -> dict[str, dict[str, float]]:
    """Per writer: share of texts the classifier / the HRV rule attribute to it, and the count."""
    profiles = writer_profiles()
    rates = {}
    for name, texts in texts_by_writer.items():
        stylometric = classifier.attribute_many(list(texts))
        hrv = [match_hrv(extractor.extract(t), profiles).name for t in texts]
        rates[name] = {
            "n": len(texts),
            "stylometric": sum(a.writer == name for a in stylometric) / len(texts),
            "hrv": sum(h == name for h in hrv) / len(texts),
        }
    return rates


def _print_rates(title: str, rates: Mapping[str, Mapping[str, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'writer':10s} {'texts':>6s} {'stylometric':>12s} {'HRV nearest':>12s}")
    for name, r in rates.items():
        print(f"  {name:10s} {int(r['n']):6d} {r['stylometric']:12.3f} {r['hrv']:12.3f}")
    total = sum(r["n"] for r in rates.values())
    for key in ("stylometric", "hrv"):
        rates_all = sum(r[key] * r["n"] for r in rates.values()) / total
        print(f"  all {key}: {rates_all:.3f} of {int(total)} (chance {1 / len(WRITERS):.3f})")


def report_real(classifier: StylometricClassifier, extractor: HRVExtractor) -> None:
    """Both attributions on the writers' held-out books, by paragraph and by passage."""
    paragraphs = {name: load_writer(name, "heldout") for name in WRITERS}
    _print_rates(
        "Real text, held-out books, one paragraph each", attribution_rates(paragraphs, classifier, extractor)
    )
    grouped = {name: passages(name) for name in WRITERS}
    _print_rates(
        f"Real text, held-out books, {PASSAGE}-paragraph passages",
        attribution_rates(grouped, classifier, extractor),
    )


def _ngrams(text: str) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i : i + NGRAM]) for i in range(len(words) - NGRAM + 1)}


def copied_share(text: str, train: set[tuple[str, ...]]) -> float:
    """Share of ``text``'s word 8-grams found verbatim in ``train``."""
    grams = _ngrams(text)
    return len(grams & train) / len(grams) if grams else 0.0


def report_generated(
    texts_by_writer: Mapping[str, Sequence[str]],
    classifier: StylometricClassifier | None = None,
    extractor: HRVExtractor | None = None,
) -> dict[str, dict[str, float]]:
    """Print and return both attributions of generated texts written in each writer's voice, with the
    largest verbatim 8-gram share from that writer's train paragraphs (the adapters' SFT data)."""
    unknown = set(texts_by_writer) - set(WRITERS)
    if unknown:
        raise SystemExit(f"unknown writer(s) {sorted(unknown)}; the shipped writers are {', '.join(WRITERS)}")
    rates = attribution_rates(
        texts_by_writer, classifier or default_classifier(), extractor or HRVExtractor()
    )
    _print_rates("Generated text, attributed to the writer it was written as", rates)
    for name, texts in texts_by_writer.items():
        train = set().union(*(_ngrams(p) for p in load_writer(name, "train")))
        shares = [copied_share(t, train) for t in texts]
        rates[name]["max_copied_8grams"] = max(shares)
        print(f"  {name}: largest share of 8-grams copied from its train paragraphs {max(shares):.1%}")
    return rates


def read_generated(folder: Path, limit: int | None) -> dict[str, list[str]]:
    """``folder/<writer>/*.txt`` -> {writer: [article texts]} (at most ``limit`` per writer)."""
    if not folder.is_dir():
        raise SystemExit(f"--generated {folder}: no such folder (expected {folder}/<writer>/*.txt)")
    found = {
        d.name: [p.read_text(encoding="utf-8") for p in sorted(d.glob("*.txt"))][:limit]
        for d in sorted(folder.iterdir())
        if d.is_dir()
    }
    found = {name: texts for name, texts in found.items() if texts}
    if not found:
        raise SystemExit(f"--generated {folder}: no <writer>/*.txt files")
    return found


def write_builtin_articles(
    prompts: Sequence[str], adapters: bool, save: Path | None = None
) -> dict[str, list[str]]:
    """Three-paragraph articles by the local writer for every (built-in profile, prompt), seed i, each
    saved as ``save/<profile>/<i>.txt`` as soon as it is written when ``save`` is given.

    ``adapters=True``: the writer drafts with ``builtin/<profile>``'s voice adapter
    (``generation.voice_adapter``); an article not drafted by it (``Article.backend``) stops the run.
    """
    from resonance_os.generation.human_resonant_writer import HumanResonantWriter
    from resonance_os.profiles.templates import BUILTIN_TEMPLATES

    writer = HumanResonantWriter(backend="local", adapter=adapters)
    articles: dict[str, list[str]] = {}
    for i, prompt in enumerate(prompts):  # prompt by prompt: a run cut short still covers every profile
        for name, template in BUILTIN_TEMPLATES.items():
            start = time.perf_counter()
            article = writer.generate(
                prompt,
                target_hrv=template.vector,
                num_paragraphs=3,
                seed=i,
                target_source=f"profile {template.key}",
            )
            if adapters and not article.backend.startswith("local+voice"):
                raise SystemExit(
                    f"--adapters on: {template.key} has no voice adapter (scripts/build_profile_adapters.py)"
                )
            articles.setdefault(name, []).append(article.text)
            if save is not None:
                (save / name).mkdir(parents=True, exist_ok=True)
                (save / name / f"{i}.txt").write_text(f"{prompt}\n\n{article.text}\n", encoding="utf-8")
            print(
                f"  {name} x {prompt!r} ({article.backend}): {time.perf_counter() - start:.0f} s,"
                f" gap {article.mean_absolute_error:.3f}",
                file=sys.stderr,
                flush=True,
            )
    return articles


def sorted_articles(folder: Path) -> dict[str, list[Path]]:
    """``folder/<profile>/<i>.txt`` files by profile, in prompt order."""
    found = {
        d.name: sorted(d.glob("*.txt"), key=lambda p: int(p.stem))
        for d in sorted(folder.iterdir())
        if d.is_dir()
    }
    if not any(found.values()):
        raise SystemExit(f"--builtin-from {folder}: no <profile>/<i>.txt articles")
    return {name: paths for name, paths in found.items() if paths}


def report_builtin(
    articles: Mapping[str, Sequence[str]], classifier: StylometricClassifier, extractor: HRVExtractor
) -> dict[str, dict[str, float]]:
    """Per built-in profile: mean |gap| of its articles, nearest-own-profile rate, classifier's reading."""
    from resonance_os.profiles.templates import BUILTIN_TEMPLATES

    profiles = {name: t.vector.to_list() for name, t in BUILTIN_TEMPLATES.items()}
    print("\nBuilt-in profiles: articles measured against their own profile")
    print(f"  {'profile':14s} {'articles':>8s} {'mean |gap|':>10s} {'nearest own':>12s}  stylometric reading")
    out = {}
    for name, texts in articles.items():
        matches = [match_hrv(extractor.extract(t), profiles) for t in texts]
        gap = sum(m.gaps[name] for m in matches) / len(matches)
        own = sum(m.name == name for m in matches) / len(matches)
        reading = Counter(a.writer for a in classifier.attribute_many(list(texts)))
        out[name] = {"n": len(texts), "gap": gap, "nearest_own": own}
        print(f"  {name:14s} {len(texts):8d} {gap:10.3f} {own:12.3f}  {dict(reading)}")
    total = sum(r["n"] for r in out.values())
    print(
        f"  all: mean |gap| {sum(r['gap'] * r['n'] for r in out.values()) / total:.3f}, nearest own "
        f"{sum(r['nearest_own'] * r['n'] for r in out.values()) / total:.3f} of {total} articles"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="real", help="comma-separated: real, builtin (default real)")
    parser.add_argument("--generated", type=Path, help="folder of generated articles, <writer>/*.txt")
    parser.add_argument(
        "--articles", type=int, default=None, help="at most this many generated articles a writer"
    )
    parser.add_argument(
        "--prompts", type=int, default=3, help=f"built-in part: prompts per profile (<= {len(PROMPTS)})"
    )
    parser.add_argument(
        "--adapters", choices=("off", "on"), default="off", help="built-in part: voice adapters"
    )
    parser.add_argument(
        "--save", type=Path, help="built-in part: save each article as SAVE/<profile>/<i>.txt"
    )
    parser.add_argument(
        "--builtin-from", type=Path, help="built-in part: measure articles saved by --save instead of writing"
    )
    args = parser.parse_args()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if parts - {"real", "builtin"}:
        parser.error(f"unknown part(s) {sorted(parts - {'real', 'builtin'})}; choose real, builtin")
    if not 1 <= args.prompts <= len(PROMPTS):
        parser.error(f"--prompts must be 1..{len(PROMPTS)}")

    start = time.perf_counter()
    classifier = default_classifier()
    extractor = HRVExtractor()
    print(f"classifier fitted on {', '.join(WRITERS)} train books in {time.perf_counter() - start:.0f} s")
    if "real" in parts:
        report_real(classifier, extractor)
    if args.generated is not None:
        report_generated(read_generated(args.generated, args.articles), classifier, extractor)
    if "builtin" in parts:
        if args.builtin_from is not None:
            articles = {
                name: [p.read_text(encoding="utf-8").split("\n\n", 1)[1] for p in paths]
                for name, paths in sorted_articles(args.builtin_from).items()
            }
        else:
            articles = write_builtin_articles(PROMPTS[: args.prompts], args.adapters == "on", args.save)
        print(f"\n(adapters {args.adapters}; {args.prompts} prompts x {len(articles)} profiles)")
        report_builtin(articles, classifier, extractor)


if __name__ == "__main__":
    main()
