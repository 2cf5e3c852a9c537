"""Feature maps for linear function approximation."""

import numpy as np
import pytest

from resonance_os.rl.errors import ConfigError, EnvMismatchError
from resonance_os.rl.features import (
    CoarseCoding,
    Fourier,
    Polynomial,
    RadialBasis,
    StateAggregation,
    TileCoding,
    sparse_table,
)


def test_state_aggregation_groups():
    features = StateAggregation(1000, 10)
    assert [features.group(s) for s in (1, 100, 101, 500, 1000)] == [0, 0, 1, 4, 9]
    assert features(250).tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    with pytest.raises(EnvMismatchError, match="1001"):
        features(1001)
    with pytest.raises(ConfigError, match="n_groups"):
        StateAggregation(10, 20)


def test_polynomial_and_fourier_bases():
    poly = Polynomial(2, 0, 1000)
    assert np.allclose(poly(500), [1.0, 0.5, 0.25])
    fourier = Fourier(3, 0, 1000)
    assert np.allclose(fourier(250), np.cos(np.pi * np.arange(4) * 0.25))
    two_d = Fourier(5, [0, 0], [1, 1])
    assert two_d.n_features == 36 and two_d([0.3, 0.7]).shape == (36,)
    with pytest.raises(ConfigError, match="high > low"):
        Polynomial(2, 1, 0)


def test_radial_basis_and_coarse_coding():
    rbf = RadialBasis([0.0, 1.0, 2.0], sigma=0.5)
    x = rbf(1.0)
    assert x[1] == pytest.approx(1.0) and x[0] == pytest.approx(np.exp(-2.0))
    coarse = CoarseCoding([[0, 0], [1, 0], [3, 3]], radius=1.0)
    assert coarse.active([0.5, 0.0]).tolist() == [0, 1]
    assert coarse([3, 3]).tolist() == [0, 0, 1]


def test_tile_coding_generalises_with_distance():
    coder = TileCoding([0, 0], [1, 1], n_tilings=8, tiles_per_dim=4, iht_size=1024)
    here = set(coder.active([0.5, 0.5]).tolist())
    assert len(here) == 8
    shared = [len(here & set(coder.active([0.5 + d, 0.5]).tolist())) for d in (0.0, 0.02, 0.1, 0.2, 0.5)]
    assert shared[0] == 8 and shared == sorted(shared, reverse=True) and shared[-1] == 0
    assert 0 < shared[2] < 8
    assert coder.table.count == len(
        set().union(*[coder.active([0.5 + d, 0.5]) for d in (0, 0.02, 0.1, 0.2, 0.5)])
    )


def test_tile_coding_indices_are_consecutive_and_action_is_a_coordinate():
    coder = TileCoding([-1.2, -0.07], [0.5, 0.07], n_tilings=8, tiles_per_dim=8, iht_size=4096, n_ints=1)
    first = coder.active([-0.5, 0.0], 0)
    assert first.tolist() == list(range(8))  # first sight: the next free indices
    assert set(coder.active([-0.5, 0.0], 1)).isdisjoint(first)
    assert coder.active([-0.5, 0.0], 0).tolist() == first.tolist()  # stable
    with pytest.raises(ConfigError, match="n_ints"):
        coder.active([-0.5, 0.0])


def test_tile_coding_offsets_are_asymmetric():
    """Tiling t is displaced by t * (1, 3) / n_tilings tile widths, not along the diagonal."""
    coder = TileCoding([0, 0], [1, 1], n_tilings=8, tiles_per_dim=1, iht_size=512)
    grid = np.arange(1, 64) / 64 + 1 / 128

    def boundaries(point):  # per tiling: first grid position where its tile changes
        start = coder.active(point(grid[0]))
        changes = np.array([coder.active(point(x)) != start for x in grid])
        return [grid[np.argmax(changes[:, t])] if changes[:, t].any() else None for t in range(8)]

    along_x, along_y = boundaries(lambda x: [x, 0.01]), boundaries(lambda y: [0.01, y])
    for t in range(1, 8):
        assert along_x[t] == pytest.approx(((-t) % 8) / 8, abs=1 / 64)
        assert along_y[t] == pytest.approx(((-3 * t) % 8) / 8, abs=1 / 64)
    assert along_x != along_y


def test_full_index_table_shares_indices_by_hash():
    coder = TileCoding([0], [1], n_tilings=4, tiles_per_dim=10, iht_size=16)
    indices = np.concatenate([coder.active([x]) for x in np.linspace(0, 1, 50)])
    assert coder.table.count == 16 and coder.table.overflow > 0
    assert indices.min() >= 0 and indices.max() < 16


def test_sparse_table_matches_dense_features():
    for features in (Fourier(4, 0, 10), StateAggregation(10, 5), CoarseCoding([[2.0], [4.0]], 1.5)):
        states = list(range(1, 11))
        idx, val = sparse_table(features, states)
        w = np.random.default_rng(0).normal(size=features.n_features)
        dense = np.array([w @ features(s) for s in states])
        assert np.allclose((val * w[idx]).sum(axis=1), dense)
