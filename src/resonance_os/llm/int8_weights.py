"""Weight-only int8 linear layers for serving: a quarter of float32's bytes per weight.

Decoding a small model on a CPU streams every weight from memory once per step, so its speed is the
memory's: SmolLM2-135M in float32 reads about 0.53 GB a step. ``quantize_linears(model)`` replaces each
decoder ``Linear`` and the output head by an :class:`Int8Linear`: the weight rounded to int8 with one
symmetric scale per output row (``scale = max |w_row| / 127``), multiplied by torch's fused
``_weight_int8pack_mm`` on bf16 activations, the result returned in the input's dtype.

Each row of a batch is computed on its own (the activations are not quantized, unlike dynamic int8
quantization, whose per-tensor activation scale makes a row's numbers depend on the rows beside it), so
a request gets the same tokens whichever requests share its batch. The numbers are not float32's: a
layer's outputs differ by about 3% of their spread, so the served log-probs differ from a float32
trainer's. The engine applies it only when asked (``EngineConfig.weights="int8"``,
``$RESONANCE_ENGINE_WEIGHTS``), never to a trainer's borrowed model.
"""

from __future__ import annotations

import os

import torch

from resonance_os.llm.errors import ConfigError

WEIGHTS_ENV = "RESONANCE_ENGINE_WEIGHTS"
WEIGHT_FORMATS = ("float", "int8")


def weight_format(value: str | None = None) -> str:
    """``value``, else ``$RESONANCE_ENGINE_WEIGHTS``, else ``"float"``; ``ConfigError`` naming the
    choices for anything else."""
    chosen = value if value is not None else os.environ.get(WEIGHTS_ENV) or "float"
    if chosen not in WEIGHT_FORMATS:
        raise ConfigError(f"weights {chosen!r} is not one of {', '.join(WEIGHT_FORMATS)}; pick one of them")
    return chosen


class Int8Linear(torch.nn.Module):
    """A frozen ``Linear`` whose weight is int8 with a scale per output row (see the module docstring)."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        scales = (weight.abs().amax(dim=1) / 127).clamp(min=1e-12)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("qweight", (weight / scales[:, None]).round().clamp(-127, 127).to(torch.int8))
        self.register_buffer("scales", scales.to(torch.bfloat16))
        self.bias = (
            None if linear.bias is None else torch.nn.Parameter(linear.bias.detach(), requires_grad=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features).to(torch.bfloat16).contiguous()
        out = torch.ops.aten._weight_int8pack_mm(rows, self.qweight, self.scales)
        out = out.to(x.dtype).reshape(*x.shape[:-1], self.out_features)
        return out if self.bias is None else out + self.bias


def quantize_linears(model: torch.nn.Module) -> int:
    """Replace every ``Linear`` of ``model`` (a causal LM: its decoder layers' projections and the
    output head) by an :class:`Int8Linear`, in place; returns how many were replaced. Embeddings, norms
    and the attention arithmetic stay in the model's dtype; a head tied to the input embeddings gets its
    own int8 copy."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, Int8Linear(child))
                replaced += 1
    if not replaced:
        raise ConfigError(f"{type(model).__name__} has no Linear layer to store in int8")
    return replaced
