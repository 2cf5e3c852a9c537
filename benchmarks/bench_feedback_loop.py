"""The human-feedback loop through the API: does the reward model learn raters it cannot read off the HRV?

    .venv/bin/python benchmarks/bench_feedback_loop.py [--seeds 1] [--sizes 100 200 500 1000] [--test-pairs 200]
        [--ppo-timesteps 0]

Five simulated raters compare pairs of texts (real prose from ``quality.corpus``):

- ``real``: a real paragraph over a damaged one (word salad, words shuffled within sentences, or a
  template draft from ``POST /v1/generate``);
- ``topic``: of two paragraphs of the Python reference, the one from the section the prompt names
  (prompt = the section's name, e.g. "context managers") over one from another section;
- ``order``: a paragraph in its real sentence order over the same sentences shuffled;
- ``style``: utility ``-||hrv - HIDDEN|| + N(0, 0.02)`` over random pairs (the only rater an HRV-only
  model can represent);
- ``mixture``: each judgment from one of the four above, at random.

Per rater and size N, a fresh tenant sends the first N judgments of a seeded stream over *training*
documents through ``POST /v1/feedback`` (texts submitted as items, the prompt with them) and trains
through ``POST /v1/reward-model/train`` (10% of texts held out inside). Then ``POST /v1/score`` scores
``--test-pairs`` pairs built the same way from ``split="heldout"`` documents: drafts no training pair
contains. Reported: how often the reward model orders a test pair like the rater's noiseless
preference, beside the best single term (resonance to the target, fluency, coherence, topic, no
repetition), chosen on the test pairs themselves, so an upper bound for any one term. With
``--ppo-timesteps`` it also trains PPO through ``POST /v1/train`` with and without the style rater's
reward model and reports the hidden utility of what each writes. The app runs in-process (FastAPI
TestClient) on a temporary SQLite database.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from fastapi.testclient import TestClient

from resonance_os.api.hr_server import create_app
from resonance_os.api.persistence.tenants import create_tenant
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.evolution.resonance_reward_model import QUALITY_TERMS, quality_terms
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.quality import corpus, damage

HIDDEN = np.array([0.55, 0.7, 0.45, 0.75, 0.3, 0.2, 0.6, 0.95])
BLOG = [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92]
TOPICS = ["remote work", "coffee roasting", "city cycling", "open source", "sleep science", "small farms"]
RATERS = ("real", "topic", "order", "style", "mixture")
STYLE_NOISE = 0.02


@dataclass(frozen=True)
class Judgment:
    """A pair and the rater's choice (``a_preferred``; ``truth`` is its noiseless preference)."""

    text_a: str
    text_b: str
    prompt: str | None
    a_preferred: bool
    truth: bool


class Texts:
    """The documents of one corpus split, and the judgments each rater makes about them."""

    def __init__(self, split: str, drafts: list[str], extractor: HRVExtractor) -> None:
        self.paragraphs = corpus.document_paragraphs(
            corpus.pydoc_paragraphs(split)
        ) + corpus.document_paragraphs(corpus.fortune_entries(split))
        self.drafts = drafts
        self.sections = _pydoc_sections(split)
        self.extractor = extractor

    def real(self, rng: random.Random, i: int) -> Judgment:
        text = rng.choice(self.paragraphs)
        kind = i % 3
        worse = (
            damage.word_salad(text, seed=i)
            if kind == 0
            else damage.shuffle_within_sentences(text, seed=i)
            if kind == 1
            else rng.choice(self.drafts)
        )
        return _ordered(text, worse, rng)

    def topic(self, rng: random.Random, i: int) -> Judgment:
        asked, other = rng.sample(sorted(self.sections), 2)
        on, off = rng.choice(self.sections[asked]), rng.choice(self.sections[other])
        return _ordered(on, off, rng, prompt=asked.replace("-", " "))

    def order(self, rng: random.Random, i: int) -> Judgment:
        while (shuffled := damage.shuffle_sentences(text := rng.choice(self.paragraphs), seed=i)) is None:
            pass
        return _ordered(text, shuffled, rng)

    def style(self, rng: random.Random, i: int) -> Judgment:
        a, b = rng.sample(self.paragraphs, 2)
        da, db = (float(np.linalg.norm(np.array(self.extractor.extract(t)) - HIDDEN)) for t in (a, b))
        noisy = -da + rng.gauss(0, STYLE_NOISE) > -db + rng.gauss(0, STYLE_NOISE)
        return Judgment(a, b, None, noisy, da < db)

    def mixture(self, rng: random.Random, i: int) -> Judgment:
        return getattr(self, rng.choice(RATERS[:-1]))(rng, i)

    def stream(self, rater: str, n: int, seed: int) -> list[Judgment]:
        rng = random.Random(f"{rater}-{seed}")
        make: Callable[[random.Random, int], Judgment] = getattr(self, rater)
        return [make(rng, i) for i in range(n)]


def _ordered(better: str, worse: str, rng: random.Random, prompt: str | None = None) -> Judgment:
    """A noiseless judgment for ``better``, shown first or second at random."""
    if rng.random() < 0.5:
        return Judgment(better, worse, prompt, True, True)
    return Judgment(worse, better, prompt, False, False)


def _pydoc_sections(split: str) -> dict[str, list[str]]:
    """Paragraphs of the Python reference by section name (sections with at least two)."""
    from pydoc_data.topics import topics

    flat = {name: " ".join(text.split()) for name, text in topics.items()}
    sections: dict[str, list[str]] = {}
    for paragraph in corpus.pydoc_paragraphs(split):
        name = next((n for n, text in flat.items() if paragraph[:80] in text), None)
        if name is not None:
            sections.setdefault(name, []).append(paragraph)
    return {name: ps for name, ps in sections.items() if len(ps) >= 2}


def generate(client, headers, n: int, seed0: int, targets: np.ndarray | None = None) -> list[dict]:
    """``n`` one-paragraph drafts through ``POST /v1/generate`` (toward ``targets`` or the blog profile)."""
    drafts = []
    for i in range(n):
        body = {"prompt": TOPICS[i % len(TOPICS)], "paragraphs": 1, "seed": seed0 + i}
        body |= {"profile": "blog"} if targets is None else {"target_hrv": targets[i].tolist()}
        drafts.append(client.post("/v1/generate", json=body, headers=headers).json())
    return drafts


def send(client, headers, judgments: list[Judgment]) -> None:
    for j in judgments:
        body = {
            "kind": "preference",
            "item": {"text": j.text_a},
            "other": {"text": j.text_b},
            "preferred": "a" if j.a_preferred else "b",
            "profile": "blog",
        }
        if j.prompt is not None:
            body["prompt"] = j.prompt
        client.post("/v1/feedback", json=body, headers=headers).raise_for_status()


def score(client, headers, text: str, prompt: str | None) -> dict:
    body = {"text": text, "profile": "blog"} | ({} if prompt is None else {"prompt": prompt})
    response = client.post("/v1/score", json=body, headers=headers)
    response.raise_for_status()
    return response.json()


def accuracy(utility_a: np.ndarray, utility_b: np.ndarray, truth: np.ndarray) -> float:
    """Share of pairs ordered like ``truth``; a tie counts one half."""
    return float(np.mean(np.where(utility_a == utility_b, 0.5, (utility_a > utility_b) == truth)))


def single_terms(client, headers, text: str, prompt: str | None) -> dict[str, float]:
    """Resonance to the blog profile (as ``/v1/score`` reports it) and the quality terms, higher = better."""
    terms = dict(zip(QUALITY_TERMS, quality_terms(text, prompt)))
    terms["repetition"] = -terms["repetition"]
    return {"resonance": score(client, headers, text, prompt)["resonance"], **terms}


def train_reward_model(client, headers, body: dict) -> dict:
    """``POST /v1/reward-model/train`` queues a job (its worker fits the model); wait for it, then read
    the new version with ``GET /v1/reward-model``."""
    job = client.post("/v1/reward-model/train", json=body, headers=headers)
    job.raise_for_status()
    job = job.json()
    while job["state"] in ("queued", "starting", "running"):
        time.sleep(0.5)
        job = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
    if job["state"] != "succeeded":
        raise RuntimeError(f"reward model job {job['state']}: {job['error']}")
    model = client.get("/v1/reward-model", headers=headers)
    model.raise_for_status()
    return model.json()


def new_tenant(client, db, name: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {create_tenant(db, name)}"}
    client.post("/v1/profiles", json={"name": "blog", "hrv": BLOG}, headers=headers).raise_for_status()
    return headers


def learning_curve(
    client, db, train: Texts, test: Texts, rater: str, sizes: list[int], seed: int, n_test: int
):
    """Held-out accuracy of the reward model at each size, the best single term, and the last metrics."""
    tests = test.stream(rater, n_test, seed=10_000 + seed)
    truth = np.array([j.truth for j in tests])
    stream = train.stream(rater, max(sizes), seed)
    ours, metrics, headers = {}, {}, None
    for n in sizes:
        headers = new_tenant(client, db, f"{rater}-{seed}-{n}")
        send(client, headers, stream[:n])
        metrics[n] = train_reward_model(client, headers, {"seed": seed, "holdout_fraction": 0.1})["metrics"]
        a = np.array([score(client, headers, j.text_a, j.prompt)["reward_model_score"] for j in tests])
        b = np.array([score(client, headers, j.text_b, j.prompt)["reward_model_score"] for j in tests])
        ours[n] = accuracy(a, b, truth)
    terms_a = [single_terms(client, headers, j.text_a, j.prompt) for j in tests]
    terms_b = [single_terms(client, headers, j.text_b, j.prompt) for j in tests]
    per_term = {
        t: accuracy(np.array([x[t] for x in terms_a]), np.array([x[t] for x in terms_b]), truth)
        for t in terms_a[0]
    }
    best = max(per_term, key=per_term.get)
    consistency = float(np.mean([j.a_preferred == j.truth for j in stream[: max(sizes)]]))
    return ours, (best, per_term[best]), metrics, consistency, headers


def hidden_distance(hrv: dict[str, float]) -> float:
    return float(np.linalg.norm(np.array([hrv[d] for d in HRV_DIMENSIONS]) - HIDDEN))


def train_policy(client, headers, use_reward_model: bool, timesteps: int, seed: int) -> str:
    body = {"profile": "blog", "timesteps": timesteps, "seed": seed, "use_reward_model": use_reward_model}
    job = client.post("/v1/train", json=body, headers=headers).json()
    while job["state"] in ("queued", "starting", "running"):
        time.sleep(2)
        job = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
    if job["state"] != "succeeded":
        raise SystemExit(f"training failed: {job['error']}")
    return job["id"]


def hidden_utility(client, headers, policy: str | None, n: int) -> np.ndarray:
    """The style rater's utility (-distance to HIDDEN) of ``n`` paragraphs written toward blog."""
    utility = []
    for i in range(n):
        body = {"prompt": TOPICS[i % 6], "paragraphs": 1, "seed": 50_000 + i, "profile": "blog"}
        if policy is not None:
            body["policy"] = policy
        utility.append(
            -hidden_distance(client.post("/v1/generate", json=body, headers=headers).json()["hrv"])
        )
    return np.array(utility)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000])
    parser.add_argument("--raters", nargs="+", default=list(RATERS), choices=RATERS)
    parser.add_argument("--test-pairs", type=int, default=200)
    parser.add_argument("--ppo-timesteps", type=int, default=0, help="> 0 adds the PPO comparison")
    parser.add_argument("--ppo-seeds", type=int, default=3)
    parser.add_argument("--articles", type=int, default=40)
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as home:
        os.environ["RESONANCE_HOME"] = home
        app = create_app(f"sqlite:///{home}/loop.db", rate_limit_per_s=1e6, rate_limit_burst=1e6)
        with TestClient(app) as client:
            db, extractor = app.state.service.db, app.state.service.extractor
            drafts = new_tenant(client, db, "drafts")
            targets = np.clip(np.random.default_rng(0).normal(BLOG, 0.18, size=(160, 8)), 0.02, 0.98)
            texts = [d["article"] for d in generate(client, drafts, 160, seed0=0, targets=targets)]
            train, test = Texts("train", texts[:120], extractor), Texts("heldout", texts[120:], extractor)
            for seed in range(args.seeds):
                for rater in args.raters:
                    started = time.perf_counter()
                    ours, baseline, metrics, consistency, headers = learning_curve(
                        client, db, train, test, rater, sizes, seed, args.test_pairs
                    )
                    rows.append(
                        (rater, seed, ours, baseline, metrics, consistency, time.perf_counter() - started)
                    )
                    if rater == "style" and seed == 0 and args.ppo_timesteps:
                        ppo_comparison(client, headers, args)

    print(f"\nHeld-out pairwise accuracy on {args.test_pairs} pairs of unseen drafts (split='heldout')\n")
    print(
        "| rater | seed | rater consistency | "
        + " | ".join(f"ours @ {n}" for n in sizes)
        + " | best single term (on the test pairs) | in-fit held-out acc @ max | text scale s | seconds |"
    )
    print("|---|---|---|" + "---|" * len(sizes) + "---|---|---|---|")
    for rater, seed, ours, (term, base), metrics, consistency, seconds in rows:
        last = metrics[sizes[-1]]
        print(
            f"| {rater} | {seed} | {consistency:.3f} | "
            + " | ".join(f"{ours[n]:.3f}" for n in sizes)
            + f" | {base:.3f} ({term}) | {last['pairwise_accuracy']:.3f} | {last['bt_text_scale']:g} | {seconds:.0f} |"
        )


def ppo_comparison(client, headers, args) -> None:
    """PPO toward blog with and without the style rater's reward model (the tenant's last one)."""
    print(
        f"\nPPO ({args.ppo_timesteps} timesteps) toward blog; {args.articles} one-paragraph articles each\n"
    )
    print("| writer | PPO seed | style rater's utility (mean ± sd) |")
    print("|---|---|---|")
    plain = hidden_utility(client, headers, None, args.articles)
    print(f"| writer toward blog, no policy | - | {plain.mean():.3f} ± {plain.std():.3f} |")
    for ppo_seed in range(args.ppo_seeds):
        for name, use in [("PPO without the reward model", False), ("PPO with the reward model", True)]:
            policy = train_policy(client, headers, use, args.ppo_timesteps, seed=ppo_seed)
            utility = hidden_utility(client, headers, policy, args.articles)
            print(f"| {name} | {ppo_seed} | {utility.mean():.3f} ± {utility.std():.3f} |")


if __name__ == "__main__":
    main()
