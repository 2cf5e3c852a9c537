"""Fit the fast coherence term's transition model (``quality.transitions``) on book paragraphs.

    .venv/bin/python scripts/train_coherence_transitions.py --books build/order_corpus [--out FILE]
    .venv/bin/python scripts/train_coherence_transitions.py --books build/order_corpus --evaluate FILE

Training data: the ``train`` book paragraphs of ``scripts/build_order_corpus.py`` (public-domain
novels, children's books and philosophy), 3-8 sentences. Whole books (VALIDATION_SHARE of them, by a
stable hash of the book's name) are kept aside for validation, and so is a whole training-only
domain, the docstring paragraphs of ``quality.corpus.docstring_paragraphs`` (expository prose unlike
the books, so validation sees a change of domain as the held-out figures do): the epoch whose mean
validation paired accuracy over the two is best is the one written. ``--extra`` fits on the training
pydoc and fortune documents too. Nothing of the held-out domains (history, essays, the book that
teaches a programming language, held-out pydoc and fortunes) is read while fitting or choosing.

Fit: pairwise ranking (the real order's score ``S`` against ``PERMS`` fresh random different orders
each epoch, loss ``log(1 + exp(S(other) - S(real)))``), Adam, seeded, one thread; then ``alpha, beta``
by logistic regression of real (1) vs one random different order (0) on ``(S - E[S]) / (n - 1)`` of the
fitting paragraphs, computed by the shipped numpy inference (so the file is checked as it will be
read). Deterministic for a given torch build (fixed seeds, one thread); written to a temporary name and
renamed.

``--evaluate FILE``: only the held-out figures of a written model beside the linear model of
``data/coherence.json``: per held-out domain, the paired accuracy of the order log-odds, real
paragraph against ``damage.shuffle_sentences`` with seeds 0..SHUFFLES-1 (ties count half).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from resonance_os.quality import corpus, damage
from resonance_os.quality.coherence import CoherenceModel, Unit, text_units
from resonance_os.quality.transitions import (
    PAIR_FEATURES,
    SENTENCE_FEATURES,
    TransitionModel,
    opening_keys,
    pair_features,
    sentence_features,
)

SEED = 0
SIZE = 8
"""Most sentences a paragraph is fitted with (the corpus holds 3-8)."""
VALIDATION_SHARE = 0.12
MIN_OPENING_COUNT = 30
PERMS = 4
MAX_STEMS = 48
MIN_STEM_COUNT = 20
MAX_VOCABULARY = 8000
SHUFFLES = 5
OUT = Path(__file__).resolve().parents[1] / "src/resonance_os/quality/data/coherence_transitions.npz"
COHERENCE_JSON = OUT.with_name("coherence.json")


def is_validation(source: str) -> bool:
    digest = hashlib.blake2b(source.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64 < VALIDATION_SHARE


def stem_vocabulary(units: list[list[Unit]]) -> list[str]:
    """Content stems seen in MIN_STEM_COUNT+ fitting sentences (at most MAX_VOCABULARY, most frequent)."""
    counts: dict[str, int] = {}
    for paragraph in units:
        for u in paragraph:
            for s in u.stems:
                counts[s] = counts.get(s, 0) + 1
    kept = sorted((k for k, c in counts.items() if c >= MIN_STEM_COUNT), key=lambda k: (-counts[k], k))
    return sorted(kept[:MAX_VOCABULARY])


def vocabulary(units: list[list[Unit]], which: int, limit: int) -> list[str]:
    """Opening keys (``which`` 0: first word, 1: first two words) seen MIN_OPENING_COUNT+ times."""
    counts: dict[str, int] = {}
    for paragraph in units:
        for u in paragraph:
            key = opening_keys(u)[which]
            counts[key] = counts.get(key, 0) + 1
    kept = sorted((k for k, c in counts.items() if c >= MIN_OPENING_COUNT), key=lambda k: (-counts[k], k))
    return sorted(kept[:limit])


class Arrays:
    """Padded feature arrays of paragraphs: ``z`` (N, SIZE, SENTENCE_FEATURES), opening ids, pair
    features (N, SIZE, SIZE, PAIR_FEATURES) and lengths."""

    def __init__(
        self,
        units: list[list[Unit]],
        first: dict[str, int],
        openings: dict[str, int],
        function: dict[str, int],
        stems: dict[str, int] | None = None,
    ) -> None:
        n = len(units)
        self.z = np.zeros((n, SIZE, SENTENCE_FEATURES + len(function)), np.float32)
        self.first = np.zeros((n, SIZE), np.int64)
        self.open = np.zeros((n, SIZE), np.int64)
        self.pairs = np.zeros((n, SIZE, SIZE, PAIR_FEATURES), np.float32)
        self.lengths = np.array([len(u) for u in units], np.int64)
        self.stems = np.zeros((n, SIZE, MAX_STEMS), np.int64)
        for b, paragraph in enumerate(units):
            m = len(paragraph)
            self.z[b, :m] = sentence_features(paragraph, function_words=function)
            self.pairs[b, :m, :m] = pair_features(paragraph)
            for i, u in enumerate(paragraph):
                f, o = opening_keys(u)
                self.first[b, i] = first.get(f, 0)
                self.open[b, i] = openings.get(o, 0)
                known = sorted(k for k in map((stems or {}).get, u.stems) if k)[:MAX_STEMS]
                self.stems[b, i, : len(known)] = known


def indicators(orders: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Role one-hots ``[b, i, role]``, adjacency ``[b, i, j]`` (j right after i) and precedence
    ``[b, i, j]`` (j anywhere after i) of ``orders[b]`` (a permutation of ``range(SIZE)``: the sentence
    index at each place; places from ``lengths[b]`` on hold the padding, in place)."""
    position = np.argsort(orders, axis=1)
    real = position < lengths[:, None]
    last = (lengths - 1)[:, None]
    roles = np.stack(
        [real & (position == 0), real & (position > 0) & (position < last), real & (position == last)], -1
    )
    pair = real[:, :, None] & real[:, None, :]
    adjacent = pair & (position[:, None, :] == position[:, :, None] + 1)
    before = pair & (position[:, :, None] < position[:, None, :])
    return roles.astype(np.float32), adjacent.astype(np.float32), before.astype(np.float32)


def random_orders(lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random order different from the real one per paragraph (padding left in place)."""
    places = np.arange(SIZE)
    padding = places[None, :] >= lengths[:, None]
    out = np.empty((len(lengths), SIZE), np.int64)
    todo = np.arange(len(lengths))
    while len(todo):
        keys = np.where(padding[todo], SIZE + places, rng.random((len(todo), SIZE)))
        out[todo] = np.argsort(keys, axis=1)
        todo = todo[(out[todo] == places).all(axis=1)]
    return out


def build_network(
    first: int,
    openings: int,
    hidden: int,
    embed: int,
    inputs: int,
    stems: int,
    stem_size: int,
    bilinear: bool,
):
    import torch

    torch.manual_seed(SEED)
    params = {
        "first_embedding": torch.randn(first + 1, embed) * 0.1,
        "opening_embedding": torch.randn(openings + 1, embed) * 0.1,
        "sentence_w": torch.randn(inputs + 2 * embed, hidden) / (inputs + 2 * embed) ** 0.5,
        "sentence_b": torch.zeros(hidden),
        "role_w": torch.randn(hidden, 3) * 0.01,
        "role_b": torch.zeros(3),
        "pair_a": torch.randn(hidden, hidden) / hidden**0.5,
        "pair_b": torch.randn(hidden, hidden) / hidden**0.5,
        "pair_p": torch.randn(PAIR_FEATURES, hidden) / PAIR_FEATURES**0.5,
        "pair_bias": torch.zeros(hidden),
        "pair_out": torch.randn(hidden, 2) * 0.01,
        "pair_out_bias": torch.zeros(2),
    }
    if stems:
        params["stem_embedding"] = torch.randn(stems + 1, stem_size) * 0.1
        width = inputs + 2 * embed + stem_size
        params["sentence_w"] = torch.randn(width, hidden) / width**0.5
    if bilinear:
        params["pair_m"] = torch.randn(hidden, hidden) * 0.01
    return {k: v.requires_grad_() for k, v in params.items()}


def parts(w, z, first, opens, pairs, stems):
    """Torch twin of ``TransitionModel.parts`` over a padded batch: R (B,S,3), A and G (B,S,S)."""
    import torch

    inputs = [z, w["first_embedding"][first], w["opening_embedding"][opens]]
    if "stem_embedding" in w:
        mask = (stems > 0).float()[..., None]
        total = (w["stem_embedding"][stems] * mask).sum(-2)
        inputs.append(total / mask.sum(-2).clamp(min=1.0))
    e = torch.relu(torch.cat(inputs, -1) @ w["sentence_w"] + w["sentence_b"])
    roles = e @ w["role_w"] + w["role_b"]
    hidden = (e @ w["pair_a"])[:, :, None] + (e @ w["pair_b"])[:, None] + pairs @ w["pair_p"] + w["pair_bias"]
    if "pair_m" in w:
        hidden = hidden + (e[:, :, None] * e[:, None]) @ w["pair_m"]
    out = torch.relu(hidden) @ w["pair_out"] + w["pair_out_bias"]
    return roles, out[..., 0], out[..., 1]


def scores(roles, adjacent, precedence, orders: np.ndarray, lengths: np.ndarray):
    import torch

    r, a, b = (torch.from_numpy(x) for x in indicators(orders, lengths))
    return (roles * r).sum((1, 2)) + (adjacent * a).sum((1, 2)) + (precedence * b).sum((1, 2))


def tensors(data: Arrays, index: np.ndarray):
    import torch

    return (
        torch.from_numpy(data.z[index]),
        torch.from_numpy(data.first[index]),
        torch.from_numpy(data.open[index]),
        torch.from_numpy(data.pairs[index]),
        torch.from_numpy(data.stems[index]),
    )


def accuracy(w, data: Arrays, seed: int) -> float:
    """Paired accuracy of real order against one random different order per paragraph."""
    import torch

    rng = np.random.default_rng(seed)
    wins = []
    with torch.no_grad():
        for start in range(0, len(data.lengths), 512):
            index = np.arange(start, min(start + 512, len(data.lengths)))
            lengths = data.lengths[index]
            roles, adjacent, precedence = parts(w, *tensors(data, index))
            identity = np.tile(np.arange(SIZE), (len(index), 1))
            real = scores(roles, adjacent, precedence, identity, lengths)
            for _ in range(PERMS):
                other = scores(roles, adjacent, precedence, random_orders(lengths, rng), lengths)
                wins.append(((real > other).float() + 0.5 * (real == other).float()).numpy())
    return float(np.concatenate(wins).mean())


def train(fit: Arrays, valid: dict[str, Arrays], epochs: int, sizes: dict[str, int], bilinear: bool):
    import torch

    torch.set_num_threads(1)
    w = build_network(inputs=fit.z.shape[-1], bilinear=bilinear, **sizes)
    optimizer = torch.optim.Adam(w.values(), lr=3e-3, weight_decay=1e-5)
    rng = np.random.default_rng(SEED)
    best, best_state = -1.0, None
    for epoch in range(epochs):
        start = time.perf_counter()
        order = rng.permutation(len(fit.lengths))
        total = 0.0
        for k in range(0, len(order), 128):
            index = order[k : k + 128]
            lengths = fit.lengths[index]
            roles, adjacent, precedence = parts(w, *tensors(fit, index))
            identity = np.tile(np.arange(SIZE), (len(index), 1))
            real = scores(roles, adjacent, precedence, identity, lengths)
            loss = 0.0
            for _ in range(PERMS):
                other = scores(roles, adjacent, precedence, random_orders(lengths, rng), lengths)
                loss = loss + torch.nn.functional.softplus(other - real).mean()
            optimizer.zero_grad()
            (loss / PERMS).backward()
            optimizer.step()
            total += float(loss.detach()) / PERMS * len(index)
        each = {name: accuracy(w, data, SEED + 1) for name, data in valid.items()}
        score = float(np.mean(list(each.values())))
        print(
            f"epoch {epoch + 1}: loss {total / len(order):.4f}, validation paired accuracy {score:.4f} ("
            + ", ".join(f"{name} {v:.4f}" for name, v in each.items())
            + f"; {time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        if score > best:
            best, best_state = score, {k: v.detach().clone() for k, v in w.items()}
    return best_state, best


def calibrate(model: TransitionModel, units: list[list[Unit]]) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    rng = random.Random(SEED + 2)
    real, other = [], []
    for paragraph in units:
        n = len(paragraph)
        order = list(range(n))
        while order == list(range(n)):
            order = rng.sample(range(n), n)
        real.append(model.order_gain(paragraph) / (n - 1))
        other.append(model.order_gain([paragraph[i] for i in order]) / (n - 1))
    fitted = LogisticRegression(C=1e4).fit(
        np.array(real + other)[:, None], [1] * len(real) + [0] * len(other)
    )
    return float(fitted.coef_[0][0]), float(fitted.intercept_[0])


def blend(linear: CoherenceModel, model: TransitionModel, paragraphs: list[list[Unit]]) -> float:
    """The weight of the linear model's order log-odds beside the transition model's: L2 logistic
    regression without intercept of real (1) vs one random different order (0) on the two log-odds
    differences, over the validation paragraphs; the linear coefficient over the transition one."""
    from sklearn.linear_model import LogisticRegression

    rng = random.Random(SEED + 4)
    rows = []
    for paragraph in paragraphs:
        n = len(paragraph)
        order = list(range(n))
        while order == list(range(n)):
            order = rng.sample(range(n), n)
        other = [paragraph[i] for i in order]
        rows.append(
            (
                model.order_logit(paragraph) - model.order_logit(other),
                linear.order_logit(paragraph) - linear.order_logit(other),
            )
        )
    x = np.array(rows)
    fitted = LogisticRegression(C=1.0, fit_intercept=False).fit(np.r_[x, -x], [1] * len(x) + [0] * len(x))
    a, b = fitted.coef_[0]
    wins = {name: float(np.mean(v > 0)) for name, v in (("transitions", x[:, 0]), ("linear", x[:, 1]))}
    wins["blend"] = float(np.mean(x[:, 0] + b / a * x[:, 1] > 0))
    print("validation paired accuracy, one order each: " + ", ".join(f"{k} {v:.4f}" for k, v in wins.items()))
    return float(b / a)


def save(
    path: Path,
    state: dict,
    vocabularies: dict[str, list[str]],
    calibration: tuple[float, float],
) -> None:
    arrays = {k: v.numpy().astype(np.float32) for k, v in state.items()}
    arrays.update({k: np.array(v, dtype=str) for k, v in vocabularies.items()})
    arrays["calibration"] = np.array(calibration, np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


def heldout_paragraphs(books: Path) -> dict[str, list[str]]:
    """Every held-out paragraph by domain: pydoc and fortunes (held-out documents), and the held-out
    book domains."""
    pools = {
        "pydoc": corpus.document_paragraphs(corpus.pydoc_paragraphs("heldout")),
        "fortunes": corpus.document_paragraphs(corpus.fortune_entries("heldout")),
    }
    for row in corpus.order_corpus(books, "heldout"):
        pools.setdefault(row["domain"], []).append(row["text"])
    return pools


def evaluate(path: Path, books: Path) -> None:
    """Held-out paired accuracy of the model at ``path`` beside the linear model (module docstring)."""
    linear = CoherenceModel.from_json(
        json.loads(
            (Path(__file__).resolve().parents[1] / "src/resonance_os/quality/data/coherence.json").read_text()
        )
    )
    model = TransitionModel.load(path)
    readers = {
        "linear (coherence.json)": linear.order_logit,
        f"transitions alone ({path.name})": model.order_logit,
        "coherence term (transitions + linear weight x linear)": CoherenceModel.from_json(
            linear.to_json(), model
        ).order_logit,
    }
    print(
        f"| domain | paragraphs | pairs | {' | '.join(readers)} |\n|---|---:|---:|" + "---:|" * len(readers)
    )
    for domain, texts in heldout_paragraphs(books).items():
        wins: dict[str, list[float]] = {name: [] for name in readers}
        paragraphs = 0
        for text in texts:
            units = text_units(text)
            if len(units) < 2:
                continue
            paragraphs += 1
            for seed in range(SHUFFLES):
                shuffled = damage.shuffle_sentences(text, seed=seed)
                if shuffled is None:
                    continue
                other = text_units(shuffled)
                if len(other) != len(units):
                    continue
                for name, read in readers.items():
                    a, b = read(units), read(other)
                    wins[name].append(1.0 if a > b else 0.5 if a == b else 0.0)
        pairs = len(next(iter(wins.values())))
        print(
            f"| {domain} | {paragraphs} | {pairs} | "
            + " | ".join(f"{np.mean(v):.3f}" for v in wins.values())
            + " |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--books", type=Path, required=True, help="build/order_corpus (scripts/build_order_corpus.py)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the model (default {OUT})")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--embed", type=int, default=8, help="opening-word embedding size (0: none)")
    parser.add_argument(
        "--function-words",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="each sentence's stop words as features too",
    )
    parser.add_argument("--stems", type=int, default=0, help="learned content-stem embedding size (0: none)")
    parser.add_argument(
        "--bilinear",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="an elementwise-product pair term too",
    )
    parser.add_argument(
        "--extra",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fit on the training pydoc and fortune paragraphs too (quality.corpus split train)",
    )
    parser.add_argument(
        "--no-docstrings", action="store_true", help="validate on the validation books only (smoke runs)"
    )
    parser.add_argument(
        "--limit", type=int, default=0, help="a seeded sample of N training paragraphs (smoke runs)"
    )
    parser.add_argument(
        "--evaluate", type=Path, default=None, help="only the held-out figures of this model file"
    )
    args = parser.parse_args()
    if args.evaluate is not None:
        evaluate(args.evaluate, args.books)
        return
    start = time.perf_counter()
    rows = corpus.order_corpus(args.books, "train")
    if args.limit:
        rows = random.Random(SEED).sample(rows, min(args.limit, len(rows)))
    fit_units, valid_units = [], []
    for row in rows:
        units = text_units(row["text"])[:SIZE]
        if len(units) >= 3:
            (valid_units if is_validation(row["source"]) else fit_units).append(units)
    if args.extra:
        for texts in (corpus.pydoc_paragraphs("train"), corpus.fortune_entries("train")):
            fit_units += [u[:SIZE] for u in map(text_units, corpus.document_paragraphs(texts)) if len(u) >= 3]
    docstring_units = []
    if not args.no_docstrings:
        docstring_units = [u[:SIZE] for u in map(text_units, corpus.docstring_paragraphs()) if len(u) >= 3]
    if not fit_units or not valid_units:
        raise SystemExit(
            f"{args.books}: {len(fit_units)} fitting and {len(valid_units)} validation paragraphs; both are "
            "needed (validation books are chosen by a hash of their name: give more books)"
        )
    limit = 400 if args.embed else 0
    first = vocabulary(fit_units, 0, limit)
    openings = vocabulary(fit_units, 1, 2 * limit)
    function = sorted(ENGLISH_STOP_WORDS) if args.function_words else []
    stems = stem_vocabulary(fit_units) if args.stems else []
    ids = (
        {w: k + 1 for k, w in enumerate(first)},
        {w: k + 1 for k, w in enumerate(openings)},
        {w: k for k, w in enumerate(function)},
        {w: k + 1 for k, w in enumerate(stems)},
    )
    valid_all = valid_units + docstring_units
    fit = Arrays(fit_units, *ids)
    valid = {"books": Arrays(valid_units, *ids)}
    if docstring_units:
        valid["docstrings"] = Arrays(docstring_units, *ids)
    vocabularies = {"first_words": first, "openings": openings, "function_words": function, "stems": stems}
    print(
        f"{len(fit_units)} fitting, {len(valid_units)} validation book and {len(docstring_units)} docstring "
        f"paragraphs, {len(first)} first words, "
        f"{len(openings)} openings ({time.perf_counter() - start:.0f} s)",
        flush=True,
    )
    sizes = {
        "first": len(first),
        "openings": len(openings),
        "hidden": args.hidden,
        "embed": max(args.embed, 1),
        "stems": len(stems),
        "stem_size": args.stems,
    }
    state, best = train(fit, valid, args.epochs, sizes, args.bilinear)
    if not args.embed:
        state["first_embedding"].zero_()
        state["opening_embedding"].zero_()
    save(args.out, state, vocabularies, (1.0, 0.0))
    model = TransitionModel.load(args.out)
    calibration = calibrate(model, random.Random(SEED + 3).sample(fit_units, min(5000, len(fit_units))))
    linear_weight = blend(
        CoherenceModel.from_json(json.loads(COHERENCE_JSON.read_text("utf-8"))), model, valid_all
    )
    save(args.out, state, vocabularies, (*calibration, linear_weight))
    print(
        f"wrote {args.out} ({args.out.stat().st_size} bytes): validation paired accuracy {best:.4f}, "
        f"alpha {calibration[0]:.4f}, beta {calibration[1]:.4f}, linear weight {linear_weight:.4f} "
        f"({time.perf_counter() - start:.0f} s)"
    )


if __name__ == "__main__":
    main()
