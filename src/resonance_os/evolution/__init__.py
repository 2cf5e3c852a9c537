"""Learning to resonate: the HRV writing environment, PPO training on it, and the reward model learned
from human feedback."""
