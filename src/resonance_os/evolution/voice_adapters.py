"""Voice adapters: a LoRA adapter that makes the drafting model write toward one profile's HRV.

Two stages, chosen for how far they move the style per CPU-minute on a 2-core machine:

1. **SFT on the paragraphs nearest the target** (rejection sampling): from candidate paragraphs
   (for a built-in profile the model's own drafts of the draft pool's training topics, first drafts
   or, with :func:`steered_candidates`, drafts steered toward the target; for a writer their own
   paragraphs), keep the ``keep`` whose measured HRV is nearest the target and whose
   writing quality holds, and fine-tune on them, each paired with the writer's own chat prompt toward
   the target (``hr_grpo.hr_messages``). An SFT step is one forward and backward pass over real text
   (2-4 s here); it needs no sampling, which is most of an HR-GRPO step (15-25 s).
2. **HR-GRPO toward the target** (``hr_grpo.train_hr_grpo``) from that start, with the KL term to the
   base model (beta 0.04) and style power 8 that kept fluency on the GPU runs (docs/llm_rl.md), and
   the held-out early stopping that keeps the best check's weights; its drift guard counts from the
   weights HR-GRPO starts from (``drift_from="start"``), since SFT moved them away from the base model
   on purpose (counted from the base model, Poe's adapter read 1.1 and 1.3 nats a token at the first
   check with learning rates four times apart: SFT's drift, which stopped every run there). A
   ``reward_model`` (for a writer, ``voice.stylometry.WriterReward``: the probability that the writer
   wrote the paragraph) is blended in with weight ``reward_model_weight``.

``train_voice_adapter`` returns the trained ``LMPolicy``; ``save_voice_adapter`` writes the adapter
folder the writer loads (``generation.voice_adapter``): ``weights/adapter.safetensors`` in float16
+ ``config.json`` (an ``LMPolicy`` checkpoint, read by ``llm.adapters.read_adapter`` too) and
``voice.json`` (target, base model, how it was trained).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resonance_os.core.errors import ValidationError
from resonance_os.evolution.base_models import SMOLLM2

if TYPE_CHECKING:
    from resonance_os.quality.reward import WritingReward

__all__ = [
    "VOICE_FILE",
    "VoiceTraining",
    "nearest_paragraphs",
    "pool_candidates",
    "save_voice_adapter",
    "split_paragraphs",
    "split_validation",
    "STEERED_FLOOR",
    "SteeredCandidates",
    "steered_candidates",
    "drifts_into_software",
    "load_voice_policy",
    "SOFTWARE_DRIFT",
    "train_voice_adapter",
    "voice_policy",
    "writer_candidates",
]

VOICE_FILE = "voice.json"
LORA_RANK = 8
LORA_ALPHA = 16.0


@dataclass(frozen=True)
class VoiceTraining:
    """Settings of one voice adapter's training (defaults sized for a 2-core CPU, 818 s for SmolLM2 at load 10-20).

    With validation paragraphs (``train_voice_adapter(validation=...)``), SFT measures their loss every
    ``sft_check_every`` steps, stops after ``sft_patience`` checks without a new lowest loss, and keeps
    the weights of the lowest: ``sft_steps`` is then the most it runs. ``sft_steps=0`` skips SFT (to
    go on from an adapter already trained, passed as the policy). ``reward_model_weight``: HR-GRPO's
    weight of a ``reward_model`` when one is given. ``max_drift``: nats per token HR-GRPO's samples may
    fall below its start's under the base model before it stops (default ``hr_grpo.HR_MAX_DRIFT``,
    written out: this module does not import HR-GRPO until it trains)."""

    keep: int = 48
    sft_steps: int = 18
    sft_learning_rate: float = 3e-4
    sft_batch_size: int = 8
    grpo_steps: int = 12
    grpo_learning_rate: float = 2e-4
    beta: float = 0.04
    style_power: float = 8.0
    early_stop_every: int | None = 4
    min_quality: float = 0.25
    seed: int = 0
    sft_check_every: int = 12
    sft_patience: int = 2
    reward_model_weight: float = 0.5
    max_drift: float = 0.25


def voice_policy(device: str | None = None, base: str = SMOLLM2) -> Any:
    """``base`` (``"smollm2"`` or a local Hugging Face folder, a private copy) with a fresh LoRA adapter
    (rank 8, alpha 16, attention and MLP projections)."""
    from resonance_os.evolution.base_models import base_model
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    tokenizer, model = base_model(base, device)
    return LMPolicy(tokenizer, model, PolicyConfig(lora_rank=LORA_RANK, lora_alpha=LORA_ALPHA))


def load_voice_policy(folder: str | os.PathLike[str], device: str | None = None) -> Any:
    """A trainable policy holding the voice adapter saved in ``folder`` (:func:`save_voice_adapter`) on
    the base model it names, to train it further (``train_voice_adapter(policy=...)``)."""
    root = Path(folder)
    if not (root / VOICE_FILE).is_file():
        raise ValidationError(f"{root} holds no voice adapter ({VOICE_FILE} is missing)")
    base = json.loads((root / VOICE_FILE).read_text())["base_model"]
    policy = voice_policy(device, base=base)
    policy.load_weights_from(root)
    return policy


def started_from(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """What a summary records of the adapter in ``folder`` that training went on from
    (:func:`load_voice_policy`): the folder and how that adapter was trained."""
    training = json.loads((Path(folder) / VOICE_FILE).read_text())["training"]
    return {"started_from": str(folder), "start_training": training}


def pool_candidates() -> list[tuple[str, str]]:
    """``(topic, paragraph)`` of the shipped draft pool's training split: SmolLM2's own first drafts
    (never the held-out topics the benchmarks write about)."""
    from resonance_os.evolution.draft_pool import load_drafts

    return [(d.prompt, d.text) for d in load_drafts(split="train")]


STEERED_FLOOR = 0.9
"""A steered draft is a candidate only when its fluency and its topic are each at least this share of
the unsteered drafts' medians: the bound the shipped directions are checked with (``FLUENCY_GOAL``).
The topic floor is needed: steered toward low intensity and exposition, SmolLM2 drifts into the
directions' documentation source ("In Python, the open function is used to create ...") whatever the
topic (half of the drafts at half strength toward ``builtin/technical``, all at full strength)."""


SOFTWARE_DRIFT = re.compile(
    r"\b(?:python|programming|programmer|syntax|source code|coding|code snippet|software|algorithms?"
    r"|indentation|api|developers?|markdown|pymodule|modules?|functions? (?:returns?|calls?|defined?))\b",
    re.IGNORECASE,
)
"""Software talk. The steering directions were learned on Python documentation, and drafts steered
toward exposition (and the adapters trained on them) drift into it whatever the topic ("This section
contains information that describes what type of data will be used by users within a single machine");
the topic term passes such a draft when it names the topic too. None of the 6,937 paragraphs of the
writer corpora matches."""


def drifts_into_software(topic: str, text: str) -> bool:
    """Whether ``text`` talks about software although its ``topic`` does not (:data:`SOFTWARE_DRIFT`)."""
    return SOFTWARE_DRIFT.search(text) is not None and SOFTWARE_DRIFT.search(topic) is None


@dataclass(frozen=True)
class SteeredCandidates:
    """:func:`steered_candidates`' drafts (``pairs``: ``(topic, paragraph)``) and how they were made:
    the strengths at scale 1, the unsteered drafts' mean HRV, and how many steered drafts fell below
    the fluency floor and (of the rest) the topic floor."""

    pairs: list[tuple[str, str]]
    strengths: dict[str, float]
    unsteered_hrv: list[float]
    dropped: dict[str, int]


def steered_candidates(
    target: Sequence[float],
    topics: Sequence[str],
    *,
    samples: int = 4,
    scales: Sequence[float] = (0.25, 0.5),
    seed: int = 0,
    backend: Any = None,
    directions: Any = None,
    fluency: Any = None,
) -> SteeredCandidates:
    """Drafts of ``topics`` by the local model toward ``target``, to choose SFT data from.

    Each topic is asked with the writer's own chat prompt toward the target (``hr_messages``), and
    answered ``samples`` times unsteered; the unsteered drafts' mean HRV ``m`` gives the change still
    wanted, ``target - m``, and ``strengths_toward`` turns it into steering strengths within each
    shipped direction's working range (the held-out dose-response curves). Each topic is then answered
    ``samples`` times at each of ``scales`` times those strengths (the same random draws as the
    unsteered ones). Every reply is cleaned as the writer cleans drafts (``clean_reply``). A steered
    draft is kept only when its fluency under the bare reference LM (``fluency``, default
    ``LMFluency()``, SmolLM2 unsteered; not the Gemma judge, which the benchmarks keep independent) and
    its topic (the fast writing reward's topic term) are at least ``STEERED_FLOOR`` of the unsteered
    drafts' medians. A draft (unsteered too: an adapter's drafts carry the drift it learned) that
    talks about software when its topic does not (:func:`drifts_into_software`) is dropped first.
    """
    from statistics import median

    from resonance_os.core.hrv_constants import HRV_DIMENSIONS
    from resonance_os.evolution.hr_grpo import hr_messages
    from resonance_os.generation.backends.local import LocalBackend
    from resonance_os.generation.llm_writing import clean_reply
    from resonance_os.generation.steering_directions import (
        sample_steered,
        shipped_directions,
        strengths_toward,
    )
    from resonance_os.profiling.hrv_extractor import HRVExtractor
    from resonance_os.quality.fluency import LMFluency
    from resonance_os.quality.reward import make_reward

    backend = backend if backend is not None else LocalBackend()
    directions = directions if directions is not None else shipped_directions()
    chats = [hr_messages(topic, target) for topic in topics for _ in range(samples)]
    owners = [topic for topic in topics for _ in range(samples)]

    dropped = {"drift": 0, "fluency": 0, "topic": 0}

    def drafts(steer: dict[str, float]) -> list[tuple[str, str]]:
        replies = sample_steered(backend, chats, [steer] * len(chats), directions, seed=seed)
        made = [(topic, text) for topic, text in zip(owners, map(clean_reply, replies)) if text]
        kept = [(topic, text) for topic, text in made if not drifts_into_software(topic, text)]
        dropped["drift"] += len(made) - len(kept)
        return kept

    plain = drafts({})
    if not plain:
        raise ValidationError("the model wrote no usable paragraph for these topics; give other topics")
    measured = HRVExtractor().extract_many(text for _, text in plain)
    mean = [sum(column) / len(column) for column in zip(*measured)]
    strengths = strengths_toward(directions, {d: t - m for d, t, m in zip(HRV_DIMENSIONS, target, mean)})
    steered = []
    if strengths:
        for scale in scales:
            steered += drafts({d: s * scale for d, s in strengths.items()})
    kept: list[tuple[str, str]] = []
    if steered:
        scorer = fluency if fluency is not None else LMFluency()
        fluent = scorer.score_many([text for _, text in plain + steered])
        reward = make_reward("fast")
        topical = [reward.score(text, list(target), prompt=topic).topic for topic, text in plain + steered]
        fluency_floor = STEERED_FLOOR * median(fluent[: len(plain)])
        topic_floor = STEERED_FLOOR * median(topical[: len(plain)])
        for pair, fluency_score, topic_score in zip(steered, fluent[len(plain) :], topical[len(plain) :]):
            if fluency_score < fluency_floor:
                dropped["fluency"] += 1
            elif topic_score < topic_floor:
                dropped["topic"] += 1
            else:
                kept.append(pair)
    return SteeredCandidates(pairs=plain + kept, strengths=strengths, unsteered_hrv=mean, dropped=dropped)


def split_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text``: blocks separated by blank lines."""
    return [block.strip() for block in text.replace("\r\n", "\n").split("\n\n") if block.strip()]


def writer_candidates(paragraphs: Sequence[str], min_words: int = 25) -> list[tuple[str, str]]:
    """``(topic, paragraph)`` for a writer's own paragraphs of at least ``min_words`` words: the topic
    is the paragraph's two leading topic phrases (``generation.topics.topic_phrases``), so the SFT
    prompt asks for a paragraph about what the writer wrote about."""
    from resonance_os.generation.topics import topic_phrases

    out = []
    for text in paragraphs:
        text = " ".join(text.split())
        if len(text.split()) >= min_words:
            out.append((" and ".join(topic_phrases(text[:600], 2)), text))
    if not out:
        raise ValidationError(
            f"no paragraph of at least {min_words} words in the writer's text; separate paragraphs with "
            "blank lines and give a few thousand words of the writer's prose"
        )
    return out


VALIDATION_SHARE = 10
"""One candidate in this many is held out for :func:`split_validation`."""
VALIDATION_MOST = 64
"""At most this many validation paragraphs: a check reads them all (about 2 s per 8 on a CPU core)."""


def split_validation(
    candidates: Sequence[tuple[str, str]],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(train, validation)``: every ``VALIDATION_SHARE``-th candidate (at most ``VALIDATION_MOST``,
    spread over the whole text) is held out to decide when SFT stops; none when there are too few
    candidates to spare ``VALIDATION_SHARE`` of them."""
    held = len(candidates) // VALIDATION_SHARE
    if held < 4:
        return list(candidates), []
    stride = len(candidates) // min(held, VALIDATION_MOST)
    picked = set(range(stride - 1, len(candidates), stride)[:VALIDATION_MOST])
    train = [c for i, c in enumerate(candidates) if i not in picked]
    return train, [candidates[i] for i in sorted(picked)]


def nearest_paragraphs(
    candidates: Sequence[tuple[str, str]],
    target: Sequence[float],
    keep: int,
    *,
    min_quality: float = 0.25,
    reward: WritingReward | str | None = None,
) -> list[tuple[str, str, float]]:
    """The ``keep`` candidates whose measured HRV is nearest ``target`` (``(topic, text, gap)``, nearest
    first), among those whose writing quality (the reward without its style term) is at least
    ``min_quality``: a paragraph near the style but badly written would teach the bad writing too.
    ``reward``: the writing reward that judges them (``quality.reward.make_reward``: ``"fast"``, the
    default, ``"lm"`` or a ``WritingReward``)."""
    from resonance_os.quality.reward import make_reward

    scorer = make_reward(reward)
    scored = []
    for topic, text in candidates:
        score = scorer.score(text, list(target), prompt=topic)
        quality = score.reward / score.resonance if score.resonance > 0 else 0.0
        if quality >= min_quality:
            scored.append((topic, text, 1.0 - score.resonance))
    if not scored:
        raise ValidationError(
            f"none of the {len(candidates)} paragraphs writes well enough to learn from (writing quality "
            f">= {min_quality}); give longer paragraphs of ordinary prose"
        )
    scored.sort(key=lambda row: row[2])
    return scored[:keep]


def train_voice_adapter(
    target: Sequence[float],
    candidates: Sequence[tuple[str, str]],
    *,
    prompts: Sequence[str] | None = None,
    validation: Sequence[tuple[str, str]] = (),
    settings: VoiceTraining | None = None,
    policy: Any = None,
    log_dir: str | os.PathLike[str] | None = None,
    report: Callable[[str], None] | None = None,
    on_step: Callable[[str, int, dict[str, Any]], None] | None = None,
    reward_model: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """SFT on the candidates nearest ``target``, then HR-GRPO toward it; returns ``(policy, summary)``.

    ``candidates``: ``(topic, paragraph)`` pairs to choose the SFT data from. ``prompts``: the HR-GRPO
    topics (default: the draft pool's training topics). ``validation``: ``(topic, paragraph)`` pairs
    not trained on (:func:`split_validation`); when given, SFT stops early and keeps its best weights
    by their loss (see :class:`VoiceTraining`). ``policy``: default :func:`voice_policy`.
    ``reward_model``: HR-GRPO's feedback reward (``predict(text, target) -> [0, 1]``), weighted
    ``settings.reward_model_weight``.
    The summary holds the chosen paragraphs' mean gap, the SFT losses (and validation checks) and the
    HR-GRPO steps run.
    ``report(message)`` gets a line per step; ``on_step(stage, step, row)`` each step's metrics row
    (stage ``"sft"`` of ``settings.sft_steps``, then ``"grpo"`` of ``settings.grpo_steps``).
    """
    from resonance_os.evolution.hr_grpo import train_hr_grpo

    cfg = settings or VoiceTraining()
    say = report or (lambda _msg: None)
    target = [float(v) for v in target]
    if policy is None:
        policy = voice_policy()
    step = on_step or (lambda _stage, _step, _row: None)
    done = {"sft": 0, "grpo": 0}

    def stepped(stage: str, row: dict[str, Any]) -> None:
        done[stage] += 1
        step(stage, done[stage], row)

    summary = (
        _sft(policy, target, candidates, validation, cfg, log_dir, say, stepped) if cfg.sft_steps else {}
    )
    if cfg.grpo_steps:

        def grpo_step(_trainer: Any, row: dict[str, Any]) -> None:
            stepped("grpo", row)
            feedback = f" writer {row['reward_feedback']:.3f}" if "reward_feedback" in row else ""
            say(
                f"grpo step {row['timesteps']}: reward {row['episode_reward_mean']:.3f} resonance "
                f"{row['reward_resonance']:.3f} fluency {row['reward_fluency']:.3f}{feedback} "
                f"({row['time_step']:.0f} s)"
            )

        trainer = train_hr_grpo(
            target_hrv=target, prompts=prompts, steps=cfg.grpo_steps, policy=policy,
            config={"learning_rate": cfg.grpo_learning_rate, "beta": cfg.beta}, seed=cfg.seed,
            style_power=cfg.style_power, early_stop_every=cfg.early_stop_every, callback=grpo_step,
            log_dir=None if log_dir is None else Path(log_dir) / "grpo", reward_model=reward_model,
            reward_model_weight=cfg.reward_model_weight, drift_from="start", max_drift=cfg.max_drift,
        )  # fmt: skip
        stop = trainer.hr_early_stopping
        summary["grpo_steps"] = len(trainer.history)
        summary["grpo_kept_step"] = None if stop is None or stop.best is None else stop.best.get("step")
        summary["grpo_checks"] = None if stop is None else stop.checks
        if reward_model is not None:
            summary["grpo_reward_model"] = type(reward_model).__name__
            summary["grpo_reward_model_weight"] = cfg.reward_model_weight
    return policy, summary


def _sft(
    policy: Any,
    target: list[float],
    candidates: Sequence[tuple[str, str]],
    validation: Sequence[tuple[str, str]],
    cfg: VoiceTraining,
    log_dir: str | os.PathLike[str] | None,
    say: Callable[[str], None],
    stepped: Callable[[str, dict[str, Any]], None],
) -> dict[str, Any]:
    """Stage 1 of :func:`train_voice_adapter` (SFT on the candidates nearest ``target``); its summary."""
    from resonance_os.evolution.hr_grpo import hr_messages
    from resonance_os.llm.early_stopping import HeldOutLossStopping
    from resonance_os.llm.sft import SFT, SFTConfig

    chosen = nearest_paragraphs(candidates, target, cfg.keep, min_quality=cfg.min_quality)
    mean_gap = sum(g for _, _, g in chosen) / len(chosen)
    say(f"SFT data: {len(chosen)} paragraphs, mean |gap| {mean_gap:.3f}")
    pairs = [(hr_messages(topic, target), text) for topic, text, _ in chosen]
    sft = SFT(
        policy,
        pairs,
        SFTConfig(
            batch_size=min(cfg.sft_batch_size, len(pairs)), learning_rate=cfg.sft_learning_rate, seed=cfg.seed
        ),
        log_dir=None if log_dir is None else Path(log_dir) / "sft",
    )

    stop = None
    if validation:
        stop = HeldOutLossStopping(
            sft, [(hr_messages(topic, target), text) for topic, text in validation],
            every=cfg.sft_check_every, patience=cfg.sft_patience,
            on_check=lambda c: say(f"sft check at step {c['step']}: validation loss {c['loss']:.4f}"),
        )  # fmt: skip

    def sft_step(trainer: Any, row: dict[str, Any]) -> bool:
        say(f"sft step {row.get('timesteps')}: loss {row.get('loss', float('nan')):.3f}")
        stepped("sft", row)
        return stop is None or stop(trainer, row)

    sft.learn(cfg.sft_steps, callback=sft_step)
    summary: dict[str, Any] = {
        "sft_paragraphs": len(chosen),
        "sft_mean_gap": mean_gap,
        "sft_loss": [r.get("loss") for r in sft.history],
    }
    if stop is not None:
        best = stop.finish()
        say(f"sft kept step {best['step']} (validation loss {best['loss']:.4f})")
        summary |= {
            "sft_validation": stop.checks,
            "sft_kept_step": best["step"],
            "sft_validation_paragraphs": len(stop.pairs),
        }
    return summary


def save_voice_adapter(
    policy: Any,
    out_dir: str | os.PathLike[str],
    target: Sequence[float],
    *,
    source: str,
    base: str = SMOLLM2,
    summary: dict[str, Any] | None = None,
) -> Path:
    """Write ``policy``'s adapter (float16) and ``voice.json`` to ``out_dir``; returns the folder."""
    import torch

    root = Path(out_dir)
    for parameter in policy.trainable_parameters():  # halve the shipped size; loading casts back
        parameter.data = parameter.data.to(torch.float16)
    try:
        policy.save(root, metadata={"voice": source})
    finally:
        for parameter in policy.trainable_parameters():
            parameter.data = parameter.data.to(torch.float32)
    info = {
        "target_hrv": [float(v) for v in target],
        "target_source": source,
        "base_model": str(base),
        "training": summary or {},
    }
    tmp = root / f".{VOICE_FILE}.tmp"
    tmp.write_text(json.dumps(info, indent=1))
    tmp.replace(root / VOICE_FILE)
    return root
