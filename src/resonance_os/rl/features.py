"""Linear features for value-function approximation (Sutton & Barto, section 9.5).

Every feature map is a callable ``features(state) -> x`` returning a float64 vector of shape
``(n_features,)``; ``v_hat(s) = w @ x(s)``. The binary codings (state aggregation, tile coding,
coarse coding) also expose ``active(state)``: the indices of their non-zero (= 1) features, which is
what the fast learners use. ``sparse_table`` turns any feature map into the ``(indices, values)``
pair of arrays the numba kernels of ``algorithms.approximation`` read.

Tile coding hashes its tiles into an index table the way Sutton's ``tiles3`` does (our own
implementation): each (tiling, tile coordinates, extra integers such as the action) gets the next
free index the first time it is seen; once the table is full, new tiles share indices by hash.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numba import njit

from resonance_os.rl.errors import ConfigError, EnvMismatchError

FeatureMap = Callable[..., np.ndarray]


def _vector(state: object) -> np.ndarray:
    return np.atleast_1d(np.asarray(state, dtype=np.float64))


def _bounds(low: float | Sequence[float], high: float | Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _vector(low), _vector(high)
    if lo.shape != hi.shape or np.any(hi <= lo):
        raise ConfigError(f"bounds low={lo.tolist()} high={hi.tolist()} need the same length and high > low")
    return lo, hi


class StateAggregation:
    """One-hot of the group of a discrete state: states ``first_state .. first_state + n_states - 1``
    split into ``n_groups`` contiguous groups of (nearly) equal size. The random walk numbers its
    states from 1, hence ``first_state=1``.
    """

    def __init__(self, n_states: int, n_groups: int, first_state: int = 1) -> None:
        if not 1 <= n_groups <= n_states:
            raise ConfigError(f"n_groups={n_groups} must lie in 1..n_states ({n_states})")
        self.n_states, self.n_features, self.first_state = n_states, n_groups, first_state

    def group(self, state: int) -> int:
        """Group index in ``0..n_groups - 1`` of ``state``."""
        offset = int(state) - self.first_state
        if not 0 <= offset < self.n_states:
            raise EnvMismatchError(
                f"state {state} is outside {self.first_state}..{self.first_state + self.n_states - 1} "
                "of this StateAggregation; check n_states and first_state"
            )
        return offset * self.n_features // self.n_states

    def active(self, state: int) -> np.ndarray:
        return np.array([self.group(state)], dtype=np.int64)

    def __call__(self, state: int) -> np.ndarray:
        x = np.zeros(self.n_features)
        x[self.group(state)] = 1.0
        return x


class _Basis:
    """Shared part of the polynomial and Fourier bases: exponent vectors over the normalised state."""

    def __init__(self, order: int, low: float | Sequence[float], high: float | Sequence[float]) -> None:
        if order < 0:
            raise ConfigError(f"order={order} must be >= 0")
        self.low, self.high = _bounds(low, high)
        self.order = order
        dims = self.low.shape[0]
        # All integer vectors c in {0..order}^dims: (order + 1) ** dims features, c = 0 is the constant.
        self.exponents = np.array(list(itertools.product(range(order + 1), repeat=dims)), dtype=np.float64)
        self.n_features = self.exponents.shape[0]

    def normalise(self, state: object) -> np.ndarray:
        """Map ``state`` from ``[low, high]`` to ``[0, 1]`` per dimension."""
        return (_vector(state) - self.low) / (self.high - self.low)


class Polynomial(_Basis):
    """Polynomial basis of order n: ``x_c(s) = prod_j s_j ** c_j`` over the normalised state."""

    def __call__(self, state: object) -> np.ndarray:
        return np.prod(self.normalise(state) ** self.exponents, axis=1)


class Fourier(_Basis):
    """Fourier cosine basis of order n: ``x_c(s) = cos(pi * c . s)`` over the normalised state."""

    def __call__(self, state: object) -> np.ndarray:
        return np.cos(math.pi * (self.exponents @ self.normalise(state)))


class RadialBasis:
    """Gaussian radial basis functions ``x_i(s) = exp(-||s - c_i||^2 / (2 sigma^2))``.

    Args:
        centers: ``(n_features, dims)`` (or ``(n_features,)`` for 1-D states) centres in state units.
        sigma: width, in state units.
    """

    def __init__(self, centers: Sequence[float] | np.ndarray, sigma: float) -> None:
        self.centers = np.asarray(centers, dtype=np.float64).reshape(len(centers), -1)
        if sigma <= 0:
            raise ConfigError(f"sigma={sigma} must be > 0")
        self.sigma, self.n_features = float(sigma), self.centers.shape[0]

    def __call__(self, state: object) -> np.ndarray:
        distance2 = np.sum((self.centers - _vector(state)) ** 2, axis=1)
        return np.exp(-distance2 / (2.0 * self.sigma**2))


class CoarseCoding:
    """Binary features, one per circle (ball): 1 when the state lies within ``radius`` of its centre.

    Args:
        centers: ``(n_features, dims)`` (or ``(n_features,)``) circle centres in state units.
        radius: circle radius, in state units.
    """

    def __init__(self, centers: Sequence[float] | np.ndarray, radius: float) -> None:
        self.centers = np.asarray(centers, dtype=np.float64).reshape(len(centers), -1)
        if radius <= 0:
            raise ConfigError(f"radius={radius} must be > 0")
        self.radius, self.n_features = float(radius), self.centers.shape[0]

    def active(self, state: object) -> np.ndarray:
        distance = np.sqrt(np.sum((self.centers - _vector(state)) ** 2, axis=1))
        return np.flatnonzero(distance <= self.radius).astype(np.int64)

    def __call__(self, state: object) -> np.ndarray:
        x = np.zeros(self.n_features)
        x[self.active(state)] = 1.0
        return x


# ----------------------------------------------------------------------------------------------
# Tile coding with a hashing index table (in the manner of tiles3)


@njit(cache=True)
def iht_index(coords: np.ndarray, keys: np.ndarray, slots: np.ndarray, counter: np.ndarray, size: int) -> int:
    """Index of the tile ``coords`` in the table, assigning the next free one on first sight.

    ``keys`` ``(capacity, len(coords))`` and ``slots`` ``(capacity,)`` form an open-addressing table
    (capacity a power of two >= 2 * size); ``counter`` holds [indices used, lookups that overflowed].
    """
    h = 0
    for c in coords:
        h = h * 1000003 + c  # int64 arithmetic wraps around, which is fine for a hash
    mask = slots.shape[0] - 1
    position = (h ^ (h >> 31)) & mask
    while True:
        index = slots[position]
        if index < 0:
            if counter[0] >= size:  # full: share indices by hash, as tiles3 does
                counter[1] += 1
                return (h & 0x7FFFFFFFFFFFFFFF) % size
            keys[position, :] = coords
            slots[position] = counter[0]
            counter[0] += 1
            return slots[position]
        same = True
        for j in range(coords.shape[0]):
            if keys[position, j] != coords[j]:
                same = False
                break
        if same:
            return index
        position = (position + 1) & mask


@njit(cache=True)
def tile_indices(
    scaled: np.ndarray,
    ints: np.ndarray,
    n_tilings: int,
    keys: np.ndarray,
    slots: np.ndarray,
    counter: np.ndarray,
    size: int,
    coords: np.ndarray,
    out: np.ndarray,
) -> None:
    """Write the active tile of each tiling into ``out`` (shape ``(n_tilings,)``).

    ``scaled`` is the state in tile widths; tiling ``t`` is displaced by ``t * (2k + 1) / n_tilings``
    tile widths in dimension ``k`` (the asymmetric offsets 1, 3, 5, ... of the book). ``coords`` is a
    scratch buffer of length ``1 + len(scaled) + len(ints)``.
    """
    dims = scaled.shape[0]
    for t in range(n_tilings):
        coords[0] = t
        for k in range(dims):
            q = math.floor(scaled[k] * n_tilings)
            coords[1 + k] = (q + t * (2 * k + 1)) // n_tilings
        for j in range(ints.shape[0]):
            coords[1 + dims + j] = ints[j]
        out[t] = iht_index(coords, keys, slots, counter, size)


class IndexHashTable:
    """Assigns consecutive feature indices ``0..size - 1`` to tiles as they are first seen.

    ``count`` is the number of indices used; ``overflow`` counts lookups made after the table was
    full (those tiles share indices by hash; make ``size`` larger if it is not 0).
    """

    def __init__(self, size: int, n_coords: int) -> None:
        if size < 1:
            raise ConfigError(f"iht_size={size} must be >= 1")
        capacity = 1 << max(1, (2 * size - 1).bit_length())
        self.size = size
        self.keys = np.zeros((capacity, n_coords), dtype=np.int64)
        self.slots = np.full(capacity, -1, dtype=np.int64)
        self.counter = np.zeros(2, dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.counter[0])

    @property
    def overflow(self) -> int:
        return int(self.counter[1])


class TileCoding:
    """Tile coding of a box-shaped state space: ``n_tilings`` offset grids of ``tiles_per_dim`` tiles.

    Args:
        low, high: bounds of each state dimension (a tile spans ``(high - low) / tiles_per_dim``).
        n_tilings: number of tilings (a power of two >= 4 * dims is the book's advice).
        tiles_per_dim: tiles across each dimension per tiling.
        iht_size: size of the index table = ``n_features``.
        n_ints: number of extra integer coordinates (e.g. 1 for the action in ``active(state, action)``).

    ``active(state, *ints)`` returns the ``(n_tilings,)`` active feature indices.
    """

    def __init__(
        self,
        low: float | Sequence[float],
        high: float | Sequence[float],
        n_tilings: int = 8,
        tiles_per_dim: float = 8,
        iht_size: int = 4096,
        n_ints: int = 0,
    ) -> None:
        if n_tilings < 1 or tiles_per_dim <= 0:
            raise ConfigError(f"n_tilings={n_tilings} and tiles_per_dim={tiles_per_dim} must be positive")
        self.low, self.high = _bounds(low, high)
        self.scale = tiles_per_dim / (self.high - self.low)
        self.n_tilings, self.n_ints, self.n_features = n_tilings, n_ints, iht_size
        self.table = IndexHashTable(iht_size, 1 + self.low.shape[0] + n_ints)
        self._coords = np.zeros(self.table.keys.shape[1], dtype=np.int64)

    def scaled(self, state: object) -> np.ndarray:
        """The state in tile widths from ``low``."""
        return (_vector(state) - self.low) * self.scale

    def active(self, state: object, *ints: int) -> np.ndarray:
        if len(ints) != self.n_ints:
            raise ConfigError(f"TileCoding was built with n_ints={self.n_ints} but got {len(ints)} integers")
        out = np.empty(self.n_tilings, dtype=np.int64)
        table = self.table
        tile_indices(
            self.scaled(state),
            np.asarray(ints, dtype=np.int64),
            self.n_tilings,
            table.keys,
            table.slots,
            table.counter,
            table.size,
            self._coords,
            out,
        )
        return out

    def __call__(self, state: object, *ints: int) -> np.ndarray:
        x = np.zeros(self.n_features)
        np.add.at(x, self.active(state, *ints), 1.0)
        return x


def sparse_table(features: FeatureMap, states: Iterable[object]) -> tuple[np.ndarray, np.ndarray]:
    """Feature table of ``states`` as ``(indices, values)``, both ``(len(states), k)``.

    Row ``i`` lists the non-zero features of ``states[i]``; rows with fewer than ``k`` entries are
    padded with index 0 and value 0, so ``v_hat = sum_j values[i, j] * w[indices[i, j]]`` holds.
    """
    rows = []
    for state in states:
        if hasattr(features, "active"):
            index = np.asarray(features.active(state), dtype=np.int64)
            rows.append((index, np.ones(index.shape[0])))
        else:
            x = np.asarray(features(state), dtype=np.float64)
            index = np.flatnonzero(x)
            rows.append((index, x[index]))
    k = max(1, max((len(index) for index, _ in rows), default=1))
    indices = np.zeros((len(rows), k), dtype=np.int64)
    values = np.zeros((len(rows), k))
    for i, (index, value) in enumerate(rows):
        indices[i, : len(index)] = index
        values[i, : len(index)] = value
    return indices, values
