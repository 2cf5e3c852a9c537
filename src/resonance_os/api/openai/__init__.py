"""The OpenAI API on ``resonance serve``: ``/v1/models``, ``/v1/chat/completions``, ``/v1/completions``
(streamed as server-sent events like OpenAI's) and ``/v1/adapters``, in front of ``llm.engine``."""
