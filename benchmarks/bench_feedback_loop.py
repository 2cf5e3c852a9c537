"""The human-feedback loop through the API, with a simulated rater whose taste is a hidden HRV.

    .venv/bin/python benchmarks/bench_feedback_loop.py [--seeds 3] [--pairs 500] [--noise 0.02 0.05]

Per seed: a tenant's profile ``blog`` is the target it asks for; the rater secretly prefers texts near
``HIDDEN`` (utility ``-||hrv - HIDDEN|| + N(0, noise)``). 120 drafts are generated through
``POST /v1/generate`` toward targets scattered around ``blog``; the rater compares ``--pairs`` random
pairs through ``POST /v1/feedback``; ``POST /v1/reward-model/train`` fits the reward model (20% held
out). Reported side by side: the rater's own consistency (how often its noisy choice matches its
noiseless preference: the ceiling for any model), the reward model's held-out pairwise accuracy, the
reference (ranking by resonance to the asked-for target) and, on 40 fresh drafts, how often the reward
model orders a pair like the hidden preference. The app runs in-process (FastAPI TestClient) on a
temporary SQLite database.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from fastapi.testclient import TestClient

from resonance_os.api.hr_server import create_app
from resonance_os.api.tenants import create_tenant
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

HIDDEN = np.array([0.55, 0.7, 0.45, 0.75, 0.3, 0.2, 0.6, 0.95])
BLOG = [0.4, 0.62, 0.35, 0.65, 0.1, 0.05, 0.3, 0.92]
TOPICS = ["remote work", "coffee roasting", "city cycling", "open source", "sleep science", "small farms"]


def hidden_distance(hrv: dict[str, float]) -> float:
    return float(np.linalg.norm(np.array([hrv[d] for d in HRV_DIMENSIONS]) - HIDDEN))


def generate(client, headers, n: int, rng: np.random.Generator, seed0: int) -> list[dict]:
    targets = np.clip(rng.normal(BLOG, 0.18, size=(n, 8)), 0.02, 0.98)
    return [
        client.post(
            "/v1/generate",
            json={"prompt": TOPICS[i % 6], "target_hrv": t.tolist(), "paragraphs": 1, "seed": seed0 + i},
            headers=headers,
        ).json()
        for i, t in enumerate(targets)
    ]


def run_loop(client, db, seed: int, pairs: int, noise: float) -> dict[str, float]:
    key = create_tenant(db, f"bench-{seed}-{int(noise * 1000)}")
    headers = {"Authorization": f"Bearer {key}"}
    client.post("/v1/profiles", json={"name": "blog", "hrv": BLOG}, headers=headers)
    rng = np.random.default_rng(seed)
    drafts = generate(client, headers, 120, rng, seed0=0)
    distance = [hidden_distance(d["hrv"]) for d in drafts]
    consistent = []
    for _ in range(pairs):
        i, j = rng.choice(len(drafts), size=2, replace=False)
        prefer_i = -distance[i] + rng.normal(0, noise) > -distance[j] + rng.normal(0, noise)
        consistent.append(prefer_i == (distance[i] < distance[j]))
        body = {
            "kind": "preference",
            "item": {"id": drafts[i]["id"]},
            "other": {"id": drafts[j]["id"]},
            "preferred": "a" if prefer_i else "b",
            "profile": "blog",
        }
        client.post("/v1/feedback", json=body, headers=headers).raise_for_status()
    metrics = client.post("/v1/reward-model/train", json={"seed": 0}, headers=headers).json()["metrics"]
    fresh = generate(client, headers, 40, rng, seed0=10_000)
    scores = [
        client.post("/v1/score", json={"text": d["article"], "profile": "blog"}, headers=headers).json()[
            "reward_model_score"
        ]
        for d in fresh
    ]
    fresh_distance = [hidden_distance(d["hrv"]) for d in fresh]
    agree = [
        (scores[a] > scores[b]) == (fresh_distance[a] < fresh_distance[b])
        for a in range(40)
        for b in range(a + 1, 40)
        if abs(fresh_distance[a] - fresh_distance[b]) > 0.02
    ]
    return headers, {
        "rater_consistency": float(np.mean(consistent)),
        "heldout_accuracy": metrics["pairwise_accuracy"],
        "reference_accuracy": metrics["baseline_pairwise_accuracy"],
        "fresh_agreement": float(np.mean(agree)),
    }


def train_policy(client, headers, use_reward_model: bool, timesteps: int, seed: int) -> str:
    body = {"profile": "blog", "timesteps": timesteps, "seed": seed, "use_reward_model": use_reward_model}
    job = client.post("/v1/train", json=body, headers=headers).json()
    while job["state"] in ("queued", "running"):
        time.sleep(2)
        job = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
    if job["state"] != "succeeded":
        raise SystemExit(f"training failed: {job['error']}")
    return job["id"]


def hidden_scores(client, headers, policy: str | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hidden-rater utility (-distance to HIDDEN) and resonance to blog of ``n`` generated paragraphs."""
    utility, resonance = [], []
    for i in range(n):
        body = {"prompt": TOPICS[i % 6], "paragraphs": 1, "seed": 50_000 + i, "profile": "blog"}
        if policy is not None:
            body["policy"] = policy
        draft = client.post("/v1/generate", json=body, headers=headers).json()
        utility.append(-hidden_distance(draft["hrv"]))
        resonance.append(draft["resonance"])
    return np.array(utility), np.array(resonance)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--noise", type=float, nargs="+", default=[0.02, 0.05])
    parser.add_argument("--ppo-timesteps", type=int, default=5000, help="0 skips the PPO comparison")
    parser.add_argument("--ppo-seeds", type=int, default=3)
    parser.add_argument("--articles", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as home:
        os.environ["RESONANCE_HOME"] = home
        app = create_app(f"sqlite:///{home}/loop.db", rate_limit_per_s=1e6, rate_limit_burst=1e6)
        rows, policies = [], []
        with TestClient(app) as client:
            for noise in args.noise:
                for seed in range(args.seeds):
                    headers, result = run_loop(client, app.state.service.db, seed, args.pairs, noise)
                    rows.append((noise, seed, result))
                    if args.ppo_timesteps and noise == args.noise[0] and seed == 0:
                        policies.append(
                            (
                                "writer toward blog, no policy",
                                "-",
                                *hidden_scores(client, headers, None, args.articles),
                            )
                        )
                        for ppo_seed in range(args.ppo_seeds):
                            for name, use in [
                                ("PPO without the reward model", False),
                                ("PPO with the reward model", True),
                            ]:
                                policy = train_policy(client, headers, use, args.ppo_timesteps, seed=ppo_seed)
                                policies.append(
                                    (name, ppo_seed, *hidden_scores(client, headers, policy, args.articles))
                                )
    print(f"\n{args.pairs} preferences per run through the API, 20% held out\n")
    print(
        "| rater noise σ | seed | rater consistency (ceiling) | reward model held-out acc | "
        "reference: resonance to target | ratio | fresh drafts ordered like the rater |"
    )
    print("|---|---|---|---|---|---|---|")
    for noise, seed, r in rows:
        print(
            f"| {noise:g} | {seed} | {r['rater_consistency']:.3f} | {r['heldout_accuracy']:.3f} | "
            f"{r['reference_accuracy']:.3f} | {r['heldout_accuracy'] / r['reference_accuracy']:.2f} | "
            f"{r['fresh_agreement']:.3f} |"
        )

    if policies:
        print(
            f"\nPPO ({args.ppo_timesteps} timesteps) toward blog, trained through /v1/train with and without the "
            f"reward model of the first run (σ = {args.noise[0]:g}); {args.articles} one-paragraph articles each\n"
        )
        print("| writer | PPO seed | hidden rater's utility (mean ± sd) | resonance to blog |")
        print("|---|---|---|---|")
        for name, ppo_seed, utility, resonance in policies:
            print(
                f"| {name} | {ppo_seed} | {utility.mean():.3f} ± {utility.std():.3f} | {resonance.mean():.3f} |"
            )
        means = {name: np.mean([u.mean() for n, _, u, _ in policies if n == name]) for name, *_ in policies}
        with_rm, without_rm = means["PPO with the reward model"], means["PPO without the reward model"]
        print(
            f"\nmean over PPO seeds: with the reward model {with_rm:.3f}, without {without_rm:.3f}, "
            f"gain {with_rm - without_rm:+.3f} (no policy: {means['writer toward blog, no policy']:.3f})"
        )


if __name__ == "__main__":
    main()
