"""A deterministic tile grid world: walk on grass, reach the award, do not fall into water.

The default map is the 8x5 grid of the spec's Q-learning article (a water border, a water wall in
column 4 of rows 1-2, the award at x=6, y=1, start at x=2, y=2). Tiles are integers: ``-1`` water,
``0`` grass, ``1`` award. Entering a tile pays its value as the reward; entering water or the award
ends the episode.

Observations are ``y * width + x`` (``Discrete(height * width)``), so a value table reshaped to
``(height, width)`` reads like the map (``table_shape`` says so to ``algorithms.tabular``). Actions
are ``0`` left, ``1`` right, ``2`` up (towards row 0), ``3`` down. Moving off a map without a
border leaves the agent where it is with reward 0. ``P`` holds the model in gymnasium's toy-text
format (``P[s][a] = [(prob, next_state, reward, terminated)]``) for dynamic programming.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from resonance_os.rl.errors import ConfigError

WATER, GRASS, AWARD = -1, 0, 1
ACTIONS = ("left", "right", "up", "down")
ARROWS = ("←", "→", "↑", "↓")
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # (dx, dy) per action

DEFAULT_MAP: tuple[tuple[int, ...], ...] = (
    (-1, -1, -1, -1, -1, -1, -1, -1),
    (-1, 0, 0, 0, -1, 0, 1, -1),
    (-1, 0, 0, 0, -1, 0, 0, -1),
    (-1, 0, 0, 0, 0, 0, 0, -1),
    (-1, -1, -1, -1, -1, -1, -1, -1),
)
DEFAULT_START = (2, 2)


def load_map(path: str | os.PathLike[str]) -> list[list[int]]:
    """Read a map from a text file: one row per line, tiles -1/0/1 separated by spaces or commas.

    Blank lines and lines starting with ``#`` are skipped.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read grid map {str(path)!r}: {exc}; pass an existing text file") from exc
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            rows.append([int(token) for token in line.replace(",", " ").split()])
        except ValueError as exc:
            raise ConfigError(
                f"grid map {str(path)!r} line {number} ({line!r}) is not a row of integers -1/0/1"
            ) from exc
    return rows


def _validate_map(tiles: Sequence[Sequence[int]]) -> np.ndarray:
    rows = [list(row) for row in tiles]
    if not rows or any(len(row) != len(rows[0]) or not row for row in rows):
        raise ConfigError("grid map must be a non-empty list of rows of equal length, e.g. [[0, 0, 1]]")
    grid = np.asarray(rows, dtype=np.int64)
    bad = sorted(set(np.unique(grid).tolist()) - {WATER, GRASS, AWARD})
    if bad:
        raise ConfigError(f"grid map has tile values {bad}; use -1 (water), 0 (grass) or 1 (award)")
    return grid


class GridWorld(gymnasium.Env):
    """Tile grid world (see the module docstring for tiles, rewards, actions and observations).

    Args:
        tiles: rows of tiles (-1 water, 0 grass, 1 award), a path to a text map (see ``load_map``),
            or ``None`` for the article's 8x5 map.
        start: ``(x, y)`` of the start tile, which must be grass; default ``(2, 2)`` when that is
            grass, else the first grass tile row by row.
        render_mode: ``"ansi"`` (text) or ``"rgb_array"`` (an image via matplotlib).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        tiles: Sequence[Sequence[int]] | str | os.PathLike[str] | None = None,
        start: tuple[int, int] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(tiles, (str, os.PathLike)):
            tiles = load_map(tiles)
        self.grid = _validate_map(DEFAULT_MAP if tiles is None else tiles)
        self.height, self.width = self.grid.shape
        if start is None:
            x, y = DEFAULT_START
            if not (x < self.width and y < self.height and self.grid[y, x] == GRASS):
                grass = np.argwhere(self.grid == GRASS)
                if len(grass) == 0:
                    raise ConfigError("grid map has no grass tile (0) to start on")
                y, x = (int(i) for i in grass[0])
            start = (x, y)
        x, y = start
        if not (0 <= x < self.width and 0 <= y < self.height) or self.grid[y, x] != GRASS:
            raise ConfigError(
                f"start {start} is not a grass tile of the {self.width}x{self.height} map; "
                "pass start=(x, y) of a tile with value 0"
            )
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode {render_mode!r} is not supported; use 'ansi' or 'rgb_array'")
        self.start = (int(x), int(y))
        self.render_mode = render_mode
        self.table_shape = (self.height, self.width)
        self.observation_space = spaces.Discrete(self.height * self.width)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.P = self._model()
        self._position = self.start
        self._values: np.ndarray | None = None
        self._policy: np.ndarray | None = None

    def set_overlay(self, values: np.ndarray | None = None, policy: np.ndarray | None = None) -> None:
        """Show ``values`` (``(height, width)``) and/or ``policy`` (action per tile, drawn as arrows)
        in ``render()``; call with no arguments to clear."""
        for name, table in (("values", values), ("policy", policy)):
            if table is not None and np.shape(table) != self.table_shape:
                raise ConfigError(f"{name} has shape {np.shape(table)}; the map needs {self.table_shape}")
        self._values, self._policy = values, policy

    def state_of(self, x: int, y: int) -> int:
        """Observation index of tile ``(x, y)``."""
        return y * self.width + x

    def position_of(self, state: int) -> tuple[int, int]:
        """``(x, y)`` of observation ``state``."""
        return int(state) % self.width, int(state) // self.width

    def is_terminal(self, state: int) -> bool:
        """Whether ``state`` is water or the award (no actions possible there)."""
        x, y = self.position_of(state)
        return bool(self.grid[y, x] != GRASS)

    def _target(self, x: int, y: int, action: int) -> tuple[int, int, float, bool]:
        dx, dy = MOVES[action]
        nx, ny = x + dx, y + dy
        if not (0 <= nx < self.width and 0 <= ny < self.height):
            return x, y, 0.0, False
        tile = int(self.grid[ny, nx])
        return nx, ny, float(tile), tile != GRASS

    def _model(self) -> dict[int, dict[int, list[tuple[float, int, float, bool]]]]:
        model: dict[int, dict[int, list[tuple[float, int, float, bool]]]] = {}
        for y in range(self.height):
            for x in range(self.width):
                s = self.state_of(x, y)
                if self.grid[y, x] != GRASS:  # absorbing: no reward, episode already over
                    model[s] = {a: [(1.0, s, 0.0, True)] for a in range(len(ACTIONS))}
                    continue
                model[s] = {}
                for a in range(len(ACTIONS)):
                    nx, ny, reward, done = self._target(x, y, a)
                    model[s][a] = [(1.0, self.state_of(nx, ny), reward, done)]
        return model

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        self._position = self.start
        return self.state_of(*self._position), {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ConfigError(f"action {action!r} is invalid; use 0 left, 1 right, 2 up or 3 down")
        x, y, reward, terminated = self._target(*self._position, int(action))
        self._position = (x, y)
        return self.state_of(x, y), reward, terminated, False, {}

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            return format_grid(self, self._values, self._policy, agent=self._position)
        if self.render_mode == "rgb_array":
            return plot_grid(self, self._values, self._policy, agent=self._position)
        return None


_TILE_CHARS = {WATER: "~", GRASS: ".", AWARD: "*"}


def format_grid(
    env: GridWorld,
    values: np.ndarray | None = None,
    policy: np.ndarray | None = None,
    agent: tuple[int, int] | None = None,
) -> str:
    """Text picture of the grid: tiles (``~`` water, ``.`` grass, ``*`` award, ``A`` agent), or values.

    Args:
        values: ``(height, width)`` table printed in each cell (e.g. from ``value_iteration``).
        policy: ``(height, width)`` action indices drawn as arrows on grass tiles.
        agent: ``(x, y)`` to mark with ``A``.
    """
    lines = []
    for y in range(env.height):
        cells = []
        for x in range(env.width):
            tile = int(env.grid[y, x])
            mark = "A" if agent == (x, y) else _TILE_CHARS[tile]
            if values is not None:
                cell = f"{float(values[y, x]):8.3g}" if tile == GRASS else f"{mark:>8}"
            else:
                cell = mark
            if policy is not None:
                cell += ARROWS[int(policy[y, x])] if tile == GRASS else " "
            cells.append(cell)
        lines.append(" ".join(cells))
    return "\n".join(lines)


def plot_grid(
    env: GridWorld,
    values: np.ndarray | None = None,
    policy: np.ndarray | None = None,
    agent: tuple[int, int] | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> np.ndarray:
    """Draw the grid with matplotlib (water blue, grass green, award gold), values and policy arrows.

    Returns the picture as an ``(H, W, 3)`` uint8 array; also saves a PNG when ``path`` is given.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    fig, ax = plt.subplots(figsize=(env.width * 0.8 + 0.4, env.height * 0.8 + 0.4), dpi=80)
    cmap = ListedColormap(["#4a90d9", "#7cc36e", "#f2c200"])
    ax.imshow(env.grid + 1, cmap=cmap, vmin=0, vmax=2)
    for y in range(env.height):
        for x in range(env.width):
            if env.grid[y, x] != GRASS:
                continue
            if values is not None:
                ax.text(x, y + 0.3, f"{float(values[y, x]):.2f}", ha="center", va="center", fontsize=8)
            if policy is not None:
                dx, dy = MOVES[int(policy[y, x])]
                ax.arrow(x - 0.2 * dx, y - 0.2 * dy - 0.1, 0.3 * dx, 0.3 * dy, head_width=0.15, color="k")
    if agent is not None:
        ax.plot(*agent, "o", color="red", markersize=12)
    ax.set_xticks(range(env.width))
    ax.set_yticks(range(env.height))
    if title:
        ax.set_title(title)
    fig.tight_layout()
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    if path is not None:
        fig.savefig(path)
    plt.close(fig)
    return image
