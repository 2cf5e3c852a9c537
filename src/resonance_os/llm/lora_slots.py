"""Many LoRA adapters on one frozen base model, trained and run together in one batch.

``LoraSlots(model)`` replaces each ``torch.nn.Linear`` that an adapter may target with a
:class:`SlotLinear`, which computes ``W x`` once for the whole batch and adds, for each row, the low-rank
update ``(alpha / r) B_s A_s x`` of the adapter ``s`` that row belongs to. Adapters ("slots") are added
and removed by name while the model serves; each has its own rank, its own targeted layers and its own
parameters (so its own gradients and optimiser), and the base weights are shared and frozen.

Usage::

    slots = LoraSlots(model)                               # once per base model
    params = slots.add("run-a", LoraSpec(rank=8, train_mlp=True, train_attn=True, train_unembed=False), seed=0)
    with slots.route(["run-a", "run-b", "run-a"]):        # one adapter name per batch row
        logits = model(input_ids, attention_mask=mask).logits
    state = slots.state_dict("run-a"); slots.load_state_dict("run-a", state)

A freshly added adapter has ``B = 0`` and so computes exactly the base model. Rows routed to a name that
is not installed (or ``None``) get the base model.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from resonance_os.llm.errors import ConfigError, LLMError

ATTENTION_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "c_attn", "out_proj", "Wqkv")
"""Linear layer names counted as attention (Llama/Qwen/Mistral, Phi, GPT-2, MPT)."""

MLP_LAYERS = ("gate_proj", "up_proj", "down_proj", "gate_up_proj", "c_fc", "fc1", "fc2", "w1", "w2", "w3")
"""Linear layer names counted as MLP."""

DEFAULT_ALPHA = 32.0
"""The LoRA scale numerator: each update is ``(alpha / rank) B A``."""


@dataclass(frozen=True)
class LoraSpec:
    """Which layers an adapter covers and its rank (``alpha`` as in :data:`DEFAULT_ALPHA`)."""

    rank: int
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        if not isinstance(self.rank, int) or self.rank < 1:
            raise ConfigError(f"rank={self.rank!r} must be an integer >= 1")
        if not (self.train_mlp or self.train_attn or self.train_unembed):
            raise ConfigError("at least one of train_mlp, train_attn, train_unembed must be true")

    def covers(self, kind: str) -> bool:
        return {"attn": self.train_attn, "mlp": self.train_mlp, "unembed": self.train_unembed}[kind]


class SlotLinear(torch.nn.Module):
    """A frozen ``Linear`` plus per-slot low-rank updates, routed per batch row by :class:`LoraSlots`."""

    def __init__(self, base: torch.nn.Linear, kind: str, owner: LoraSlots) -> None:
        super().__init__()
        self.base = base
        self.kind = kind
        self.lora_a = torch.nn.ParameterDict()
        self.lora_b = torch.nn.ParameterDict()
        self.scales: dict[str, tuple[str, float]] = {}  # adapter name -> (parameter key, alpha / rank)
        self._owner = [owner]  # a list, so the owner is not registered as a child module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        segments = self._owner[0].active_routes()
        if not any(name in self.scales for name, _ in segments):
            return out
        # one contiguous block of rows per segment (views of x, not copies), and the updates joined into
        # one tensor added once: a batch of several adapters costs what one adapter's batch costs, in the
        # backward pass too (a gather per adapter would write a batch-sized gradient per adapter)
        parts = x.split([size for _, size in segments]) if len(segments) > 1 else (x,)
        deltas = []
        for (name, _), part in zip(segments, parts, strict=True):
            if name in self.scales:
                a, b = self.pair(name)
                deltas.append((part.to(a.dtype) @ a.T @ b.T * self.scales[name][1]).to(out.dtype))
            else:
                deltas.append(out.new_zeros((*part.shape[:-1], out.shape[-1])))
        return out + (torch.cat(deltas) if len(deltas) > 1 else deltas[0])

    def pair(self, name: str) -> tuple[torch.nn.Parameter, torch.nn.Parameter]:
        """Adapter ``name``'s (A, B) in this layer."""
        key = self.scales[name][0]
        return self.lora_a[key], self.lora_b[key]


class LoraSlots:
    """The adapters of one base model (see the module docstring). Not thread-safe: one caller at a time."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        for p in model.parameters():
            p.requires_grad_(False)
        self.layers: list[tuple[str, SlotLinear]] = []
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        for parent_name, parent in list(model.named_modules()):
            for child_name, child in list(parent.named_children()):
                if not isinstance(child, torch.nn.Linear):
                    continue
                kind = (
                    "unembed"
                    if child is head
                    else "attn"
                    if child_name in ATTENTION_LAYERS
                    else "mlp"
                    if child_name in MLP_LAYERS
                    else None
                )
                if kind is None:
                    continue
                slot_layer = SlotLinear(child, kind, self)
                setattr(parent, child_name, slot_layer)
                self.layers.append((f"{parent_name}.{child_name}".lstrip("."), slot_layer))
        if not self.layers:
            raise LLMError(f"{type(model).__name__} has no linear layer an adapter can target")
        self.specs: dict[str, LoraSpec] = {}
        self._next_key = 0
        self._routes: list[tuple[str | None, int]] = []

    # ----------------------------------------------------------------------------------- adapters
    def add(self, name: str, spec: LoraSpec, seed: int | None = None) -> list[torch.nn.Parameter]:
        """Install adapter ``name`` (A: Kaiming-uniform from ``seed``, as peft does; B: zeros) and return
        its trainable parameters in a fixed order."""
        if name in self.specs:
            raise LLMError(f"an adapter named {name!r} is already installed")
        generator = torch.Generator().manual_seed(seed if seed is not None else torch.seed() % 2**63)
        params: list[torch.nn.Parameter] = []
        for _, layer in self.layers:
            if not spec.covers(layer.kind):
                continue
            weight = layer.base.weight
            a = torch.empty(spec.rank, layer.base.in_features, dtype=torch.float32)
            bound = 1.0 / math.sqrt(layer.base.in_features)  # kaiming_uniform_(a=sqrt(5)) on (r, d_in)
            a.uniform_(-bound, bound, generator=generator)
            key = f"slot{self._next_key}"  # ParameterDict keys may not hold '.' or shadow its methods
            layer.lora_a[key] = torch.nn.Parameter(a.to(weight.device))
            layer.lora_b[key] = torch.nn.Parameter(
                torch.zeros(layer.base.out_features, spec.rank, dtype=torch.float32, device=weight.device)
            )
            layer.scales[name] = (key, spec.alpha / spec.rank)
            params += layer.pair(name)
        self._next_key += 1
        if not params:
            raise ConfigError(f"{spec} covers no layer of {type(self.model).__name__}")
        self.specs[name] = spec
        return params

    def remove(self, name: str) -> None:
        """Uninstall adapter ``name`` (no-op when absent)."""
        for _, layer in self.layers:
            if name in layer.scales:
                key = layer.scales.pop(name)[0]
                del layer.lora_a[key], layer.lora_b[key]
        self.specs.pop(name, None)

    def parameters(self, name: str) -> list[torch.nn.Parameter]:
        """Adapter ``name``'s parameters, in the order :meth:`add` returned them."""
        self._require(name)
        out: list[torch.nn.Parameter] = []
        for _, layer in self.layers:
            if name in layer.scales:
                out += layer.pair(name)
        return out

    def state_dict(self, name: str) -> dict[str, torch.Tensor]:
        """Adapter ``name``'s weights as ``{"<layer>.lora_A.weight": A, "<layer>.lora_B.weight": B}``
        (peft's key names), detached copies."""
        self._require(name)
        out: dict[str, torch.Tensor] = {}
        for path, layer in self.layers:
            if name in layer.scales:
                a, b = layer.pair(name)
                out[f"{path}.lora_A.weight"] = a.detach().clone()
                out[f"{path}.lora_B.weight"] = b.detach().clone()
        return out

    def load_state_dict(self, name: str, state: dict[str, torch.Tensor]) -> None:
        """Copy ``state`` (from :meth:`state_dict` of an adapter with the same spec) into ``name``."""
        expected = self.state_dict(name)
        if set(state) != set(expected):
            missing, extra = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
            raise LLMError(
                f"adapter weights do not fit {name!r}: missing {missing[:3]}, unexpected {extra[:3]}"
            )
        with torch.no_grad():
            for path, layer in self.layers:
                if name in layer.scales:
                    for key, param in (
                        (f"{path}.lora_A.weight", layer.pair(name)[0]),
                        (f"{path}.lora_B.weight", layer.pair(name)[1]),
                    ):
                        if state[key].shape != param.shape:
                            raise LLMError(
                                f"{key}: shape {tuple(state[key].shape)}, adapter has {tuple(param.shape)}"
                            )
                        param.copy_(state[key])

    def _require(self, name: str) -> None:
        if name not in self.specs:
            raise LLMError(f"no adapter named {name!r} is installed")

    # ----------------------------------------------------------------------------------- routing
    @contextmanager
    def route(self, names: Sequence[str | None] | str | None) -> Iterator[None]:
        """Run the model's forward passes inside with row ``i`` on adapter ``names[i]`` (a single name:
        every row; ``None``: the base model). Rows of one adapter are cheapest side by side."""
        previous = self._routes
        if names is None or isinstance(names, str):
            self._routes = [(names, -1)]  # -1: every row
        else:
            segments: list[tuple[str | None, int]] = []
            for name in names:
                if segments and segments[-1][0] == name:
                    segments[-1] = (name, segments[-1][1] + 1)
                else:
                    segments.append((name, 1))
            self._routes = segments
        try:
            yield
        finally:
            self._routes = previous

    def active_routes(self) -> list[tuple[str | None, int]]:
        """The current batch as (adapter name or None, number of consecutive rows) segments, in row order
        (one segment of -1 rows: the whole batch)."""
        return self._routes
