"""The ODE-control article's comparison: uncontrolled vs LQR vs SAC vs GP on MGM, Van der Pol, Lorenz, mean field.

For each system every controller is obtained (SAC and GP within an env-step budget), then rolled out
from the system's fixed evaluation start states. Reported per controller: J (mean per-step cost over
the horizon, divergence penalties included), the steady-state cost (last 20% of steps), reaction
steps (until the cost first falls below 10% of its first value), the action variation mean|du| (lower
is smoother), the env steps used to learn, the steps after which the learning curve stays within
10% of its final J, and the wall time. Plots of each state and u(t) from the first start state go to
``benchmarks/out/control/<system>.png``, the rows to ``results_<system>.json`` beside them (so
systems can run in separate processes).

    .venv/bin/python benchmarks/bench_control.py [--systems mgm vanderpol lorenz meanfield] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from resonance_os.rl.control import SYSTEMS, evaluate, make_env, steps_to_converge, train_controller  # noqa: E402
from resonance_os.rl.envs.ode.plot import plot_trajectories  # noqa: E402

torch.set_num_threads(1)
OUT = Path(__file__).parent / "out" / "control"


def compare(system: str, seed: int, sac_steps: int | None, gp_steps: int | None) -> list[dict]:
    spec = SYSTEMS[system]
    algos = ["none", "lqr", "sac", "gp"] if spec.lqr_q is not None else ["none", "sac", "gp"]
    rows, first = [], {}
    for algo in algos:
        budget = {"sac": sac_steps, "gp": gp_steps}.get(algo)
        trained = train_controller(system, algo, steps=budget, seed=seed)
        trajs = evaluate(system, trained.act)
        first[{"none": "uncontrolled"}.get(algo, algo.upper() if algo != "gp" else "GP")] = trajs[0]
        rows.append({
            "system": system, "controller": algo,
            "J": float(np.mean([t.mean_cost for t in trajs])),
            "steady": float(np.mean([t.final_cost() for t in trajs])),
            "react": float(np.mean([t.reaction_steps() for t in trajs])),
            "du": float(np.mean([t.action_variation for t in trajs])),
            "diverged": int(sum(t.diverged for t in trajs)),
            "steps": trained.steps, "converged_at": steps_to_converge(trained.curve),
            "wall_s": trained.wall_s, "curve": trained.curve,
        })  # fmt: skip
        print_row(rows[-1])
    plot_trajectories(first, make_env(system).unwrapped.state_names, OUT / f"{system}.png",
                      title=f"{system}: start seed 1000")  # fmt: skip
    return rows


HEADER = (f"{'system':>9} | {'controller':>10} | {'J':>9} | {'steady':>9} | {'react':>6} | {'mean|du|':>8} | "
          f"{'div':>3} | {'steps':>6} | {'conv@':>6} | {'wall s':>7}")  # fmt: skip


def print_row(r: dict) -> None:
    conv = "-" if r["converged_at"] is None else str(r["converged_at"])
    print(f"{r['system']:>9} | {r['controller']:>10} | {r['J']:9.4f} | {r['steady']:9.4f} | {r['react']:6.1f} | "
          f"{r['du']:8.3f} | {r['diverged']:3d} | {r['steps']:6d} | {conv:>6} | {r['wall_s']:7.1f}", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sac-steps", type=int, default=None, help="default: each system's budget")
    parser.add_argument("--gp-steps", type=int, default=None, help="default: each system's budget")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    print(HEADER, flush=True)
    results = []
    for system in args.systems:
        rows = compare(system, args.seed, args.sac_steps, args.gp_steps)
        (OUT / f"results_{system}.json").write_text(json.dumps(rows, indent=2))
        results += rows
    print("\n" + HEADER)
    for row in results:
        print_row(row)


if __name__ == "__main__":
    main()
