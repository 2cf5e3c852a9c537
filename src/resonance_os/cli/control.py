"""``resonance control SYSTEM --algo sac|gp|lqr``: learn a controller for an ODE system and compare it
with no control on the system's fixed evaluation start states (optionally plotting x(t) and u(t))."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from resonance_os.cli.errors import run_reporting_user_errors


class System(str, Enum):
    mgm = "mgm"
    vanderpol = "vanderpol"
    lorenz = "lorenz"
    meanfield = "meanfield"


class Algo(str, Enum):
    sac = "sac"
    gp = "gp"
    lqr = "lqr"


def control(
    system: System = typer.Argument(..., help="ODE system: mgm, vanderpol, lorenz or meanfield."),
    algo: Algo = typer.Option(
        Algo.gp, "--algo", help="Controller: sac, gp (Bayesian-optimised feedback) or lqr."
    ),
    steps: int | None = typer.Option(
        None, "--steps", min=1, help="Env-step budget to learn (default per system)."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write x(t) and u(t) from the first start to this PNG."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the learner."),
) -> None:
    """Learn a controller and print its cost J next to the uncontrolled system's."""

    def run() -> None:
        import torch

        from resonance_os.rl.control import evaluate, make_env, train_controller
        from resonance_os.rl.envs.ode.plot import plot_trajectories

        torch.set_num_threads(1)
        trained = train_controller(system.value, algo.value, steps=steps, seed=seed)
        results = {
            "uncontrolled": evaluate(system.value, None),
            algo.value.upper(): evaluate(system.value, trained.act),
        }
        table = Table(title=f"{system.value}: {len(results['uncontrolled'])} fixed start states")
        # J: mean per-step cost; steady: cost over the last 20% of steps; react: steps until the cost
        # first falls below 10% of its start; mean|du|: action variation (lower is smoother).
        for column in ("controller", "J", "steady", "react", "mean|du|", "diverged", "env steps", "wall s"):
            table.add_column(column, justify="right")
        for label, trajs in results.items():
            n = len(trajs)
            learned = label != "uncontrolled"
            table.add_row(
                label,
                f"{sum(t.mean_cost for t in trajs) / n:.4f}",
                f"{sum(t.final_cost() for t in trajs) / n:.4f}",
                f"{sum(t.reaction_steps() for t in trajs) / n:.1f}",
                f"{sum(t.action_variation for t in trajs) / n:.3f}",
                str(sum(t.diverged for t in trajs)),
                str(trained.steps if learned else 0),
                f"{trained.wall_s:.1f}" if learned else "-",
            )
        console = Console()
        console.width = max(console.width, 100)
        console.print(table)
        if plot is not None:
            plot.parent.mkdir(parents=True, exist_ok=True)
            first = {label: trajs[0] for label, trajs in results.items()}
            plot_trajectories(first, make_env(system.value).unwrapped.state_names, plot, title=system.value)
            console.print(f"plot written to {plot}")

    run_reporting_user_errors(run)
