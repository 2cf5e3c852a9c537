"""Language-model RL on the ``rl`` engine: GRPO-family losses (more to come: policy, sampling, trainer).

Generic: it knows nothing of writing. It imports ``resonance_os.rl`` only; nothing in ``rl`` imports it.
"""

from __future__ import annotations
