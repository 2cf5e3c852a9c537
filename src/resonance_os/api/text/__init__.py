"""The service's CPU-bound text work: the engine, the worker processes that run it, turns at the
writer, steered rewrites, and the original's in-process call."""
