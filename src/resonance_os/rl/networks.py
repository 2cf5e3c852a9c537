"""Network building blocks shared by the algorithms: MLPs from layer widths, activations by name."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU,
    "gelu": nn.GELU,
    "silu": nn.SiLU,
}


def activation_class(name: str) -> type[nn.Module]:
    """Look up an activation by name (``relu``, ``tanh``, ``elu``, ``leaky_relu``, ``gelu``, ``silu``)."""
    try:
        return ACTIVATIONS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}") from None


def build_mlp(
    in_dim: int,
    hidden: Sequence[int],
    out_dim: int | None = None,
    activation: str = "relu",
    output_activation: str | None = None,
) -> nn.Sequential:
    """``in_dim -> hidden[0] -> ... -> hidden[-1] (-> out_dim)`` with ``activation`` after each hidden layer.

    With ``out_dim=None`` the network ends at the last hidden layer (a feature extractor).
    """
    act = activation_class(activation)
    layers: list[nn.Module] = []
    last = in_dim
    for width in hidden:
        layers += [nn.Linear(last, width), act()]
        last = width
    if out_dim is not None:
        layers.append(nn.Linear(last, out_dim))
        if output_activation is not None:
            layers.append(activation_class(output_activation)())
    return nn.Sequential(*layers)


def num_parameters(module: nn.Module) -> int:
    """Number of trainable parameters of ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
