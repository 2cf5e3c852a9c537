"""The ``resonance`` command (typer): thin shells over the library's calls."""
