"""The engine's key/value memory: one slot per running sequence, and a store of computed prompt prefixes.

``SlotKV`` keeps, for every attention layer, keys and values as ``(slots, kv_heads, capacity, head_dim)``
tensors that grow (doubling) as sequences and lengths need. A sequence owns one slot; its token at
position ``p`` has its key at ``[slot, :, p]``. The engine keeps the running sequences in slots
``0 .. k-1``, so a decode step attends to a view of the first ``k`` slots and copies nothing; a
finished sequence's slot is refilled by moving the last one into it.

``forward_cache(slots, positions, kv_len)`` returns the object handed to a transformers model as its
cache for one forward pass: its ``update`` (called by every attention layer) writes the new keys and
values at each row's own positions and returns the keys and values the rows attend to. Which of
those a row may see is the engine's 4-D attention mask (key position <= the query's position), so
sequences of different lengths share one batch without padding their caches.

``PrefixStore`` keeps copies of computed prompt key/values (least recently used out first, within a
byte budget), keyed by the adapter they were computed with: a new prompt that starts with a stored
one copies those positions instead of computing them (prefix sharing across requests).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch


class SlotKV:
    """Per-layer key/value tensors indexed by slot and position (allocated on the first forward)."""

    def __init__(self, slots: int = 8, capacity: int = 256) -> None:
        self.slots, self.capacity = slots, capacity
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    @property
    def bytes_per_token(self) -> int:
        """Bytes one cached token costs over all layers (0 before the first forward)."""
        return sum(2 * k.shape[1] * k.shape[3] * k.element_size() for k in self.keys)

    def reserve(self, slots: int, capacity: int) -> None:
        """Grow to at least ``slots`` slots and ``capacity`` positions (doubling; contents kept)."""
        new_slots, new_capacity = self.slots, self.capacity
        while new_slots < slots:
            new_slots *= 2
        while new_capacity < capacity:
            new_capacity *= 2
        if (new_slots, new_capacity) == (self.slots, self.capacity):
            return
        for store in (self.keys, self.values):
            for i, old in enumerate(store):
                grown = old.new_zeros((new_slots, old.shape[1], new_capacity, old.shape[3]))
                grown[: old.shape[0], :, : old.shape[2]] = old
                store[i] = grown
        self.slots, self.capacity = new_slots, new_capacity

    def move(self, source: int, target: int, length: int) -> None:
        """Copy the first ``length`` positions of slot ``source`` into slot ``target``."""
        for store in (self.keys, self.values):
            for tensor in store:
                tensor[target, :, :length] = tensor[source, :, :length]

    def read(self, slot: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Copies of the first ``length`` positions of ``slot``, one (keys, values) pair per layer."""
        return [
            (k[slot, :, :length].clone(), v[slot, :, :length].clone()) for k, v in zip(self.keys, self.values)
        ]

    def write(self, slot: int, layers: list[tuple[torch.Tensor, torch.Tensor]], length: int) -> None:
        """Put the first ``length`` positions of ``layers`` (from :meth:`read`) into ``slot``."""
        for (k, v), key, value in zip(layers, self.keys, self.values):
            key[slot, :, :length] = k[:, :length]
            value[slot, :, :length] = v[:, :length]

    def clear(self) -> None:
        """Drop every tensor (after a failed forward pass the contents are unknown)."""
        self.keys, self.values = [], []

    def forward_cache(self, slots: list[int], positions: torch.Tensor, kv_len: int) -> _ForwardCache:
        """The cache object for one forward pass of rows ``slots`` whose tokens sit at ``positions``
        (rows x query tokens); attention sees positions ``0 .. kv_len-1`` of each row's slot."""
        return _ForwardCache(self, slots, positions, kv_len)


class _ForwardCache:
    """What a transformers attention layer calls ``cache.update`` on, for one forward pass."""

    is_compileable = False

    def __init__(self, kv: SlotKV, slots: list[int], positions: torch.Tensor, kv_len: int) -> None:
        self.kv, self.positions, self.kv_len = kv, positions, kv_len
        contiguous = slots == list(range(slots[0], slots[0] + len(slots))) if slots else True
        self.rows = slice(slots[0], slots[0] + len(slots)) if contiguous else torch.tensor(slots)
        self.row_index = torch.tensor(slots)[:, None]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        kv = self.kv
        if layer_idx == len(kv.keys):  # first forward: allocate this layer's tensors
            shape = (kv.slots, key_states.shape[1], kv.capacity, key_states.shape[3])
            kv.keys.append(key_states.new_zeros(shape))
            kv.values.append(value_states.new_zeros(shape))
        keys, values = kv.keys[layer_idx], kv.values[layer_idx]
        # (rows, heads, q, dim) -> (rows, q, heads, dim): the order advanced indexing puts it in
        keys[self.row_index, :, self.positions] = key_states.transpose(1, 2).to(keys.dtype)
        values[self.row_index, :, self.positions] = value_states.transpose(1, 2).to(values.dtype)
        return keys[self.rows, :, : self.kv_len], values[self.rows, :, : self.kv_len]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.kv_len


@dataclass
class _Prefix:
    tokens: tuple[int, ...]
    layers: list[tuple[torch.Tensor, torch.Tensor]]
    nbytes: int


class PrefixStore:
    """Computed prompt key/values by (adapter, tokens); longest-prefix lookup; LRU within ``max_bytes``."""

    def __init__(self, max_bytes: int = 256 * 2**20, min_tokens: int = 8) -> None:
        self.max_bytes, self.min_tokens = max_bytes, min_tokens
        self.entries: OrderedDict[tuple[str, tuple[int, ...]], _Prefix] = OrderedDict()
        self.nbytes = 0

    def longest(self, adapter: str, tokens: list[int], limit: int) -> tuple[int, _Prefix | None]:
        """The longest stored prefix of ``tokens`` (at most ``limit`` tokens, at least ``min_tokens``)
        computed with ``adapter``: (its length, the entry), or (0, None)."""
        best, found = 0, None
        probe = torch.tensor(tokens[:limit])
        for name, key in self.entries:
            if name != adapter or len(key) < self.min_tokens:
                continue
            n = min(len(key), len(probe))
            same = torch.tensor(key[:n]) == probe[:n]
            length = n if bool(same.all()) else int((~same).nonzero()[0])
            if length > best:
                best, found = length, (name, key)
        if found is None or best < self.min_tokens:
            return 0, None
        self.entries.move_to_end(found)
        return best, self.entries[found]

    def add(self, adapter: str, tokens: list[int], layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Store a computed prompt (its per-layer key/value copies); evicts the least recently used."""
        key = (adapter, tuple(tokens))
        nbytes = sum(k.numel() * k.element_size() * 2 for k, _ in layers)
        if len(tokens) < self.min_tokens or nbytes > self.max_bytes:
            return
        if key in self.entries:
            self.entries.move_to_end(key)
            return
        while self.entries and self.nbytes + nbytes > self.max_bytes:
            _, old = self.entries.popitem(last=False)
            self.nbytes -= old.nbytes
        self.entries[key] = _Prefix(key[1], layers, nbytes)
        self.nbytes += nbytes

    def drop(self, adapter: str) -> None:
        """Forget every prefix computed with ``adapter`` (it was unloaded or replaced), also those
        computed with residual additions on it (keys ``adapter + "+..."``)."""
        for key in [k for k in self.entries if k[0] == adapter or k[0].startswith(adapter + "+")]:
            self.nbytes -= self.entries.pop(key).nbytes
