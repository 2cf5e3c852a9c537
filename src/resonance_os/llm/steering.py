"""Activation steering: add a vector to a causal LM's residual stream while it runs.

Contrastive activation addition (Turner et al. 2023, "Activation Addition"; Rimsky et al. 2024,
"Steering Llama 2 via Contrastive Activation Addition"): with ``h_l(x)`` the residual stream after
decoder layer ``l``, a direction ``v_l = mean_{x in A} h_l(x) - mean_{x in B} h_l(x)`` separates two
sets of texts; adding ``s * v_l`` to ``h_l`` at every position while the model decodes moves its text
toward ``A`` (``s > 0``) or ``B`` (``s < 0``).

    with steering(model, {layer: delta}):      # delta: (H,) for every row, or (B, H): one per row
        model.generate(...)                     # or any forward pass; batched generation included

    means = residual_means(model, input_ids, attention_mask, span_mask, layers=[4, 8])  # {l: (N, H)}
    norm = typical_norm(model, input_ids, attention_mask, span_mask, layer=8)           # a float

Rows whose delta is all zeros are left bit-identical (``h + 0 == h``). A fixed ``(B, H)`` delta suits a
fixed batch; where rows join and leave (continuous batching), the generation engine takes additions per
request (``llm.engine.GenerationEngine.submit(..., additions={layer: vector})``) and applies them
through this hook, one forward pass at a time, with each row's own vector. Works for Llama-family
(``model.model.layers``), GPT-2 (``transformer.h``), GPT-NeoX (``gpt_neox.layers``) layouts and for
models wrapped by PEFT. Generic: knows nothing of what the directions mean.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import torch

from resonance_os.llm.errors import ConfigError

_LAYER_PATHS = (
    ("model", "layers"),
    ("transformer", "h"),
    ("gpt_neox", "layers"),
    ("model", "decoder", "layers"),
)


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The model's decoder blocks in order (unwraps PEFT and ``LMPolicy``-style ``base_model``)."""
    seen = model
    for _ in range(4):
        for path in _LAYER_PATHS:
            node = seen
            for name in path:
                node = getattr(node, name, None)
                if node is None:
                    break
            if isinstance(node, torch.nn.ModuleList):
                return node
        inner = getattr(seen, "base_model", None) or getattr(seen, "model", None)
        if not isinstance(inner, torch.nn.Module) or inner is seen:
            break
        seen = inner
    raise ConfigError(
        f"cannot find the decoder layers of {type(model).__name__}; steering supports causal LMs whose "
        "blocks are model.layers (Llama, Qwen, Mistral, SmolLM), transformer.h (GPT-2) or gpt_neox.layers"
    )


def _check_layer(layers: torch.nn.ModuleList, layer: int) -> None:
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(layers):
        raise ConfigError(f"layer must be a whole number from 0 to {len(layers) - 1}, got {layer!r}")


def _add_to_output(output, delta: torch.Tensor):
    hidden = output[0] if isinstance(output, tuple) else output
    if delta.dim() == 2:
        if delta.shape[0] != hidden.shape[0]:
            raise ConfigError(
                f"per-row steering has {delta.shape[0]} rows but the batch has {hidden.shape[0]}; "
                "pass one delta per row of the batch (num_return_sequences rows included) or a single (H,) delta"
            )
        delta = delta[:, None, :]
    steered = hidden + delta.to(hidden.dtype)
    return (steered, *output[1:]) if isinstance(output, tuple) else steered


@contextmanager
def steering(model: torch.nn.Module, additions: Mapping[int, torch.Tensor]) -> Iterator[None]:
    """Add ``additions[layer]`` to the output of decoder layer ``layer`` (0-based) on every forward
    pass inside the block, at every position.

    Each addition is ``(H,)`` (every row) or ``(B, H)`` (row ``b`` of the batch gets ``delta[b]``: per-row
    strengths in one batched generation). Additions that are all zero register no hook at all, so
    ``steering(model, {l: 0 * v})`` is exactly the unsteered model. Hooks are removed on exit, also
    after an error.
    """
    layers = decoder_layers(model)
    hidden = getattr(getattr(model, "config", None), "hidden_size", None)
    handles = []
    try:
        for layer, delta in additions.items():
            _check_layer(layers, layer)
            delta = torch.as_tensor(delta).detach()
            if delta.dim() not in (1, 2) or (hidden is not None and delta.shape[-1] != hidden):
                raise ConfigError(
                    f"the addition at layer {layer} has shape {tuple(delta.shape)}; expected ({hidden},) "
                    f"or (batch, {hidden})"
                )
            if not torch.any(delta):
                continue
            delta = delta.to(next(layers[layer].parameters()).device)
            handles.append(
                layers[layer].register_forward_hook(lambda _m, _i, out, d=delta: _add_to_output(out, d))
            )
        yield
    finally:
        for handle in handles:
            handle.remove()


@torch.no_grad()
def residual_states(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    layers: Sequence[int],
) -> dict[int, torch.Tensor]:
    """``{layer: (B, T, H)}``: the residual stream after each decoder layer in ``layers``."""
    blocks = decoder_layers(model)
    captured: dict[int, torch.Tensor] = {}
    handles = []
    try:
        for layer in layers:
            _check_layer(blocks, layer)
            handles.append(
                blocks[layer].register_forward_hook(
                    lambda _m, _i, out, at=layer: captured.__setitem__(
                        at, out[0] if isinstance(out, tuple) else out
                    )
                )
            )
        model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return {layer: captured[layer].float() for layer in layers}


def residual_means(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    span_mask: torch.Tensor,
    layers: Sequence[int],
) -> dict[int, torch.Tensor]:
    """``{layer: (B, H)}``: each row's residual stream averaged over the positions where ``span_mask``
    (``(B, T)``, bool) is true (e.g. the tokens of a reply, not its prompt)."""
    span = span_mask.to(torch.float32)
    if torch.any(span.sum(1) == 0):
        raise ConfigError("every row needs at least one position in span_mask")
    states = residual_states(model, input_ids, attention_mask, layers)
    weights = (span / span.sum(1, keepdim=True))[:, :, None]
    return {layer: (h * weights).sum(1) for layer, h in states.items()}


def typical_norm(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    span_mask: torch.Tensor,
    layer: int,
) -> float:
    """The median L2 norm of the residual stream after ``layer`` over the ``span_mask`` positions: the
    scale a steering vector is measured against (a vector of this norm doubles a typical state)."""
    h = residual_states(model, input_ids, attention_mask, [layer])[layer]
    return float(h.norm(dim=-1)[span_mask.bool()].median())
