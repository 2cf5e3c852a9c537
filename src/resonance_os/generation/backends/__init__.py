"""Text backends: the built-in composer, OpenAI-compatible chat servers, a local small model."""
