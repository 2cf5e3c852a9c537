"""The OpenAI-API tests' server: the tiny model saved as a Hugging Face folder, and a real
``resonance serve`` (``LiveServer``, not yet started) serving it from a database, home and runs
folder of its own."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "llm"))
from live_server import LiveServer  # noqa: E402
from tiny_lm import make_model, make_tokenizer  # noqa: E402


def save_tiny_model(folder: Path, context: int = 128) -> Path:
    """The tiny model and its tokenizer saved in ``folder`` (the served model's id is the folder's name)."""
    tokenizer = make_tokenizer()
    make_model(len(tokenizer), context=context).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def model_server(
    tmp: Path, pepper: str, model_folder: Path, name: str = "", **env: str
) -> tuple[LiveServer, Path]:
    """A server of ``model_folder`` with database ``tmp/<name or db>.sqlite``, home ``tmp/home[-name]``
    and runs folder ``tmp/runs[-name]`` (returned beside it); ``env`` added to its environment."""
    suffix = f"-{name}" if name else ""
    runs, database = tmp / f"runs{suffix}", tmp / f"{name or 'db'}.sqlite"
    server = LiveServer(
        f"sqlite:///{database}",
        env={
            "RESONANCE_HOME": str(tmp / f"home{suffix}"),
            "RESONANCE_KEY_PEPPER": pepper,
            "RESONANCE_OPENAI_MODEL": str(model_folder),
            "RESONANCE_OPENAI_RUNS": str(runs),
            **env,
        },
    )
    return server, runs
