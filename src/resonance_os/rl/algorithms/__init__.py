"""RL algorithms, one file per method family (import the module you need; torch loads only there)."""
