"""Fixtures the engine tests share: the tiny tokenizer and a generation engine on the tiny model."""

from __future__ import annotations

import pytest


@pytest.fixture
def tokenizer():
    from tiny_lm import make_tokenizer

    return make_tokenizer()


@pytest.fixture
def engine(tokenizer):
    from tiny_lm import make_model

    from resonance_os.llm.engine import EngineConfig, GenerationEngine

    with GenerationEngine(
        make_model(len(tokenizer), context=128), tokenizer, EngineConfig(min_prefix_tokens=4)
    ) as eng:
        yield eng
