"""ResonanceOS: measure, write toward and learn the Human Resonance Vector (HRV) of text."""

__version__ = "0.1.0"
