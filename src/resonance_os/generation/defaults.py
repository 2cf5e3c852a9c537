"""Re-exports of the profiles layer's target resolution for the modules that still import it from here.

Deprecated: import :func:`resonance_os.profiles.targets.resolve_target` at the edges (API, CLI,
evolution) and pass the resolved vector down; this module goes once its last importers have moved.
"""

from resonance_os.profiles.targets import default_target, resolve_target

__all__ = ["default_target", "resolve_target"]
