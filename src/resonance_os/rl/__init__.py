"""The general RL engine: algorithms, environments, networks, buffers, logger and checkpoints.

It imports nothing ResonanceOS-specific, so it can be used on any gymnasium environment.
"""
