"""All of a module's parameters as views into one flat tensor.

The optimizer then updates one tensor, the gradient norm is one reduction and clearing gradients is
one assignment: on small networks this removes most of the per-parameter Python and dispatch
overhead of ``optimizer.step()``, ``clip_grad_norm_`` and ``zero_grad`` (the idea of the flat
"bucket" buffers of PyTorch's DDP and of apex). A network whose forward takes ``param`` as an
input and returns the flat gradient from its backward (see ``rl/policies.py``) makes autograd
deliver that single gradient tensor directly.
"""

from __future__ import annotations

import torch
from torch import nn


class FlatParameters:
    """Re-home ``module``'s parameters into one flat ``nn.Parameter`` (``self.param``).

    After construction each parameter of ``module`` is a view into ``self.param`` (updates to it
    show in the module at once); give ``[flat.param]`` to the optimizer. Do not move or cast the
    module afterwards (``.to``/``.double``): that would replace the views.
    ``module.load_state_dict`` keeps working (it copies into the views).
    """

    def __init__(self, module: nn.Module) -> None:
        self.params = list(module.parameters())
        self.param = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in self.params]))
        offset = 0
        for p in self.params:
            n = p.numel()
            p.data = self.param.data[offset : offset + n].view_as(p)
            offset += n

    def gather(self, grads: dict[nn.Parameter, torch.Tensor]) -> torch.Tensor:
        """One flat gradient from per-parameter gradients ``{parameter: grad}`` (all parameters present)."""
        return torch.cat([grads[p].reshape(-1) for p in self.params])

    def zero_grad(self) -> None:
        """Drop the gradient (the next backward stores its flat gradient without an add)."""
        self.param.grad = None

    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """Scale the gradient so its global L2 norm is at most ``max_norm`` (``torch.nn.utils.clip_grad_norm_``'s
        rule: factor ``min(1, max_norm / (norm + 1e-6))``); returns the norm before clipping."""
        grad = self.param.grad
        norm = torch.linalg.vector_norm(grad)
        grad.mul_((max_norm / (norm + 1e-6)).clamp_(max=1.0))
        return norm
