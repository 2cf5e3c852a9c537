"""Forward and hand-written backward passes of plain MLPs, without autograd.

An MLP is given as its layers ``[(weight, bias), ...]`` in one of two layouts:

* ``stacked=True``: ``k`` networks of identical widths, weight ``(k, in, out)``, bias ``(k, 1, out)``
  (as :class:`~resonance_os.rl.algorithms.sac.EnsembleCritic`); inputs ``(B, in)`` (shared by all
  ``k``) or ``(k, B, in)``, outputs ``(k, B, out)``; one ``baddbmm`` per layer for all members.
* ``stacked=False``: one network of ``nn.Linear`` layers, weight ``(out, in)``, bias ``(out,)``;
  inputs ``(B, in)``, outputs ``(B, out)``.

The hidden activation is applied after every layer but the last (``relu`` in place: the cached
pre-activation is then the output, which is all ``relu``'s backward needs). :func:`mlp_backward` writes the
weight and bias gradients into given tensors (typically views into one flat gradient, see
:class:`~resonance_os.rl.flat_params.FlatParameters`) with ``out=`` kernels, so nothing is allocated
for them and the optimizer sees one gradient tensor. Used by SAC, whose update needs gradients of the
critics w.r.t. actions only, and actor gradients from a subset of the rows of a batched forward.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from resonance_os.rl.policies import _ACTIVATIONS

Layer = tuple[torch.Tensor, torch.Tensor]
Cache = list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def mlp_forward(
    layers: Sequence[Layer], x: torch.Tensor, activation: str, stacked: bool
) -> tuple[torch.Tensor, Cache]:
    """Output of the MLP on ``x`` and the cache ``[(input, pre-activation, output), ...]`` per layer."""
    act = _ACTIVATIONS[activation][0]
    cache: Cache = []
    h = x
    last = len(layers) - 1
    for i, (w, b) in enumerate(layers):
        if stacked:
            if h.dim() == 2:
                h = h.expand(w.shape[0], *h.shape)
            z = torch.baddbmm(b, h, w)
        else:
            z = torch.addmm(b, h, w.t())
        y = z if i == last else z.relu_() if activation == "relu" else act(z)  # relu: in place, y is z
        cache.append((h, z, y))
        h = y
    return h, cache


def mlp_backward(
    layers: Sequence[Layer],
    cache: Cache,
    grad_out: torch.Tensor,
    activation: str,
    stacked: bool,
    grads: Sequence[Layer] | None = None,
    rows: int | None = None,
) -> torch.Tensor:
    """Back-propagate ``grad_out`` (the loss gradient w.r.t. the output) through the MLP.

    Weight and bias gradients are written into ``grads`` (same shapes as ``layers``; ``None``: not
    computed). ``rows``: only the first ``rows`` batch rows of the cached forward belong to the loss
    (``grad_out`` has that many rows; ``stacked=False`` only). Returns the gradient w.r.t. the first
    layer's pre-activation (``(B, h_1)`` or ``(k, B, h_1)``); multiply by its weight for the input's.
    """
    act_backward = _ACTIVATIONS[activation][1]
    g = grad_out
    last = len(layers) - 1
    for i in range(last, -1, -1):
        h, z, y = cache[i]
        if rows is not None:
            h, z, y = h[:rows], z[:rows], y[:rows]
        if i < last:
            g = act_backward(g, z, y)
        if grads is not None:
            gw, gb = grads[i]
            if stacked:
                torch.bmm(h.transpose(1, 2), g, out=gw)
                torch.sum(g, dim=1, keepdim=True, out=gb)
            else:
                torch.mm(g.t(), h, out=gw)
                torch.sum(g, dim=0, out=gb)
        if i > 0:
            w = layers[i][0]
            g = torch.bmm(g, w.transpose(1, 2)) if stacked else torch.mm(g, w)
    return g
