"""``resonance classic ...``: the spec's grid world and the Sutton & Barto reproductions."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console

from resonance_os.cli.errors import run_reporting_user_errors
from resonance_os.rl.errors import ConfigError

app = typer.Typer(
    help="Classic RL: value iteration and Q-learning on a grid world; Sutton & Barto ch. 9-10 figures.",
    no_args_is_help=True,
)
console = Console(highlight=False, soft_wrap=True)


class GridAlgo(str, Enum):
    value_iteration = "value-iteration"
    q_learning = "q-learning"
    sarsa = "sarsa"


def _parse_start(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        x, y = (int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(f"--start {text!r} is not 'x,y' (two integers, e.g. 2,2)") from None
    return x, y


@app.command()
def gridworld(
    algo: GridAlgo = typer.Option(GridAlgo.value_iteration, "--algo", help="Method to run."),
    steps: int = typer.Option(
        None,
        "--steps",
        min=1,
        help="Learning steps; default 1000 for q-learning, 5000 for sarsa.",
        show_default=False,
    ),
    alpha: float = typer.Option(
        None,
        "--alpha",
        help="Step size; default 0.005 for q-learning (the article's), 0.1 for sarsa.",
        show_default=False,
    ),
    gamma: float = typer.Option(0.9, "--gamma", help="Discount factor."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    map_file: Path = typer.Option(
        None,
        "--map",
        help="Text map: rows of -1 (water), 0 (grass), 1 (award). Default: the article's 8x5 map.",
    ),
    start: str = typer.Option(
        None,
        "--start",
        help="Start tile 'x,y'. Default 2,2, or the first grass tile of a custom map.",
        show_default=False,
    ),
) -> None:
    """Solve the grid world and print each grass tile's value with the greedy action as an arrow.

    q-learning is the article's variant: each step backs up every action of the current state
    through the model, then moves epsilon-greedily (epsilon 1 -> 0.05, minus 0.005 per step).
    """

    def run() -> None:
        from resonance_os.rl.algorithms import tabular
        from resonance_os.rl.envs.gridworld import GridWorld, format_grid

        env = GridWorld(map_file, start=_parse_start(start))
        if algo is GridAlgo.value_iteration:
            values = tabular.value_iteration(env, gamma=gamma)
            q = tabular.action_values(env, values, gamma=gamma)
            title = f"value iteration, gamma {gamma}"
        else:
            if algo is GridAlgo.q_learning:
                rate, n_steps = alpha or 0.005, steps or 1000
                q = tabular.q_learning(env, n_steps, alpha=rate, gamma=gamma, seed=seed, sweep_actions=True)
            else:
                rate, n_steps = alpha or 0.1, steps or 5000
                q = tabular.sarsa(env, n_steps, alpha=rate, gamma=gamma, seed=seed)
            values = q.max(axis=-1)
            title = f"{algo.value}, {n_steps} steps, alpha {rate}, gamma {gamma}, seed {seed}"
        path = tabular.greedy_rollout(env, q, max_steps=env.observation_space.n)
        x, y = env.position_of(path[-1])
        reached = env.grid[y, x] == 1
        console.print(title, markup=False)
        console.print(format_grid(env, values=values, policy=tabular.greedy_policy(q)), markup=False)
        ending = "reaches the award" if reached else "does not reach the award"
        console.print(
            f"greedy path from the start {env.start}: {len(path) - 1} steps, {ending}", markup=False
        )

    run_reporting_user_errors(run)


@app.command()
def reproduce(
    figure: list[str] = typer.Option(
        None,
        "--figure",
        help="Figure to run (repeatable): gridworld, 9.1, 9.2-left, 9.2-right, 9.5, 9.10, 10.2. Default all.",
    ),
    out: Path = typer.Option(Path("benchmarks/out/sutton"), "--out", help="Folder for the PNGs."),
    quick: bool = typer.Option(False, "--quick", help="Fewer runs/episodes (seconds instead of minutes)."),
) -> None:
    """Reproduce Sutton & Barto's figures 9.1, 9.2, 9.5, 9.10, 10.2 and the spec's grid world."""

    def run() -> None:
        from resonance_os.rl.sutton_reproduction import format_result
        from resonance_os.rl.sutton_reproduction import reproduce as run_figures

        run_figures(
            figure, out, quick, report=lambda result: console.print(format_result(result), markup=False)
        )

    run_reporting_user_errors(run)
