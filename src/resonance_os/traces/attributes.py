"""Flat OpenTelemetry attributes (dotted keys, list indices as segments) back to nested values.

The rules are Agent Lightning 0.3's (``agentlightning.utils.otel``): a key is under ``prefix`` when it is
``prefix`` itself or starts with ``prefix.``; a dict whose keys are exactly ``"0".."n-1"`` becomes a list.
"""

from __future__ import annotations

from typing import Any


def under_prefix(attributes: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The attributes whose key is ``prefix`` or starts with ``prefix.``."""
    dotted = prefix + "."
    return {k: v for k, v in attributes.items() if k == prefix or k.startswith(dotted)}


def unflatten(flat: dict[str, Any]) -> dict[str, Any] | list[Any]:
    """``{"a.b": 1, "a.c.0": 2, "a.c.1": 3}`` -> ``{"a": {"b": 1, "c": [2, 3]}}``."""
    root: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = root
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return _lists_from_indexed(root)


def _lists_from_indexed(node: Any) -> Any:
    if isinstance(node, list):
        return [_lists_from_indexed(v) for v in node]
    if not isinstance(node, dict):
        return node
    for key, value in list(node.items()):
        node[key] = _lists_from_indexed(value)
    if node and all(isinstance(k, str) and k.isdigit() for k in node):
        indices = sorted(int(k) for k in node)
        if indices == list(range(len(indices))):
            return [node[str(i)] for i in indices]
    return node


def unflatten_under(attributes: dict[str, Any], prefix: str) -> dict[str, Any] | list[Any]:
    """The attributes under ``prefix``, with the prefix removed, unflattened (``{}`` when none)."""
    stripped = {k[len(prefix) + 1 :]: v for k, v in under_prefix(attributes, prefix).items() if k != prefix}
    return unflatten(stripped)
