"""Linear-quadratic regulator on the linearisation of an ODE control environment at its equilibrium.

For ``dx/dt = f(x, u)`` with equilibrium ``x*`` (``f(x*, 0) = 0``), the Jacobians ``A = df/dx`` and
``B = df/du`` at ``(x*, 0)`` are taken by central differences. The continuous algebraic Riccati
equation ``A^T P + P A - P B R^-1 B^T P + Q = 0`` is solved with ``scipy.linalg.solve_continuous_are``
and the feedback is ``u = -K (x - x*)`` with ``K = R^-1 B^T P``, clipped to the action bounds.
For the Moore-Greitzer model with ``Q = I``, ``R = 1``: ``K = [-0.41421, 1.35219]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import gymnasium
import numpy as np
from scipy import linalg

from resonance_os.rl.errors import ConfigError, EnvMismatchError

Dynamics = Callable[[float, np.ndarray, float], np.ndarray]


def linearize(
    dynamics: Dynamics, x_eq: np.ndarray, u_eq: float = 0.0, eps: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    """Central-difference Jacobians ``A`` (n, n) and ``B`` (n, 1) of ``dynamics(t, x, u)`` at ``(x_eq, u_eq)``."""
    x_eq = np.asarray(x_eq, dtype=np.float64)
    n = x_eq.size
    a = np.empty((n, n))
    for j in range(n):
        step = np.zeros(n)
        step[j] = eps
        a[:, j] = (dynamics(0.0, x_eq + step, u_eq) - dynamics(0.0, x_eq - step, u_eq)) / (2 * eps)
    b = ((dynamics(0.0, x_eq, u_eq + eps) - dynamics(0.0, x_eq, u_eq - eps)) / (2 * eps)).reshape(n, 1)
    return a, b


def lqr_gain(a: np.ndarray, b: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """The LQR gain ``K`` (m, n) for ``dx/dt = A x + B u`` and cost ``x^T Q x + u^T R u``.

    Raises ``ConfigError`` when no stabilising solution exists (the pair (A, B) is not stabilisable).
    """
    try:
        p = linalg.solve_continuous_are(a, b, q, r)
    except (linalg.LinAlgError, ValueError) as exc:
        raise ConfigError(
            f"the Riccati equation has no stabilising solution ({exc}); the linearisation is not "
            "stabilisable from this input, so LQR does not apply to this system"
        ) from exc
    k = np.linalg.solve(r, b.T @ p)
    if np.max(np.linalg.eigvals(a - b @ k).real) >= 0:
        raise ConfigError(
            "the LQR closed loop A - BK is not stable: the linearisation is not stabilisable from this "
            "input, so LQR does not apply to this system"
        )
    return k


@dataclass
class LQRConfig:
    """LQR weights: ``Q = q * I`` (state) and ``R = r`` (control), both > 0 (defaults 1 and 1)."""

    q: float = 1.0
    r: float = 1.0

    def __post_init__(self) -> None:
        for name in ("q", "r"):
            value = getattr(self, name)
            if not value > 0:
                raise ConfigError(f"LQRConfig.{name}={value} must be > 0")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class LQR:
    """LQR controller for an ODE control env (one exposing ``dynamics(t, x, u)`` and ``equilibrium``).

    ``LQR(env, q=1.0, r=1.0)``; ``predict(obs)`` returns ``(u, None)`` with ``u`` of shape ``(1,)``
    (or ``(batch, 1)``) clipped to the action bounds. The gain is ``self.gain`` (shape ``(1, n)``).
    """

    def __init__(self, env: gymnasium.Env, **config: float) -> None:
        self.config = LQRConfig(**config)
        system = env.unwrapped
        if not (hasattr(system, "dynamics") and hasattr(system, "equilibrium")):
            raise EnvMismatchError(
                f"{type(system).__name__} has no dynamics(t, x, u)/equilibrium; LQR needs an ODE "
                "control env such as resonance_os/MGM-v0"
            )
        self.equilibrium = np.asarray(system.equilibrium, dtype=np.float64)
        n = self.equilibrium.size
        self.a, self.b = linearize(system.dynamics, self.equilibrium)
        self.gain = lqr_gain(self.a, self.b, self.config.q * np.eye(n), np.array([[self.config.r]]))
        self.low = np.asarray(env.action_space.low, dtype=np.float64)
        self.high = np.asarray(env.action_space.high, dtype=np.float64)

    def predict(self, observation: np.ndarray, deterministic: bool = True) -> tuple[np.ndarray, None]:
        x = np.asarray(observation, dtype=np.float64)
        u = -(x - self.equilibrium) @ self.gain.T
        return np.clip(u, self.low, self.high).astype(np.float32), None
