"""Plot controlled trajectories (each state and u against time) to a PNG, as in the ODE-control article."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from resonance_os.rl.envs.ode.rollout import Trajectory


def plot_trajectories(
    trajectories: Mapping[str, Trajectory],
    state_names: Sequence[str],
    path: str | os.PathLike[str],
    title: str = "",
) -> None:
    """One panel per state plus one for ``u``; one line per controller (the mapping's keys label them)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(state_names) + ["u"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.0 * len(panels)), sharex=True)
    for label, traj in trajectories.items():
        for i in range(len(state_names)):
            axes[i].plot(traj.time, traj.states[:, i], label=label, lw=1.2)
        axes[-1].step(traj.time[1:], traj.actions, where="pre", label=label, lw=1.2)
    for ax, name in zip(axes, panels):
        ax.set_ylabel(f"{name}(t)")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8, ncol=len(trajectories))
    axes[-1].set_xlabel("t")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
