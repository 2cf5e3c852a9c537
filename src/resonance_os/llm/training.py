"""What the LM trainers (``llm.grpo.GRPO``, ``llm.sft.SFT``) share: one optimiser step."""

from __future__ import annotations

import torch


def optimizer_step(
    optimizer: torch.optim.Optimizer, loss: torch.Tensor, max_grad_norm: float | None
) -> torch.Tensor:
    """Backward ``loss`` into fresh gradients, clip their global norm to ``max_grad_norm`` (None: no
    clipping) and step ``optimizer``; returns the norm before clipping."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    max_norm = max_grad_norm if max_grad_norm is not None else float("inf")
    grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    return grad_norm
