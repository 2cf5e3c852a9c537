"""The generation engine: continuous batching over one causal LM, its LoRA adapters by name, shared prefixes.

One background thread runs steps. A step (1) admits waiting requests while the batch has room
(round-robin over the requests' ``group``, e.g. one per tenant, so no group holds the others back),
(2) computes the admitted prompts in one forward pass (*prefill*) and samples each choice's first
token, (3) runs one decode forward pass over every running sequence and samples its next token, and
(4) retires finished sequences. Requests therefore join and leave the running batch between decode
steps: a short request finishes while a long one keeps going.

Prefix sharing: a prompt is computed once for its ``n`` choices (its keys/values are copied into the
other choices' slots), and each computed prompt is kept in a :class:`~resonance_os.llm.kv_slots.PrefixStore`,
so a later prompt that starts with it (the same chat system prompt, a GRPO group, a resubmitted
prompt) computes only its new tokens. ``stats().prefill_tokens`` counts the prompt tokens actually
computed, ``stats().prefix_hit_tokens`` those reused. Of prompts that share a prefix and arrive
together, the first is computed alone and the others in a second pass of the same step, which finds
the first's prefix stored.

Sampling per sequence: temperature, top-k, top-p, presence/frequency penalties, repetition penalty
and no repeated n-grams (both over prompt and completion, as transformers' ``generate``), stop strings
and stop token ids, ``max_tokens`` (the top-p nucleus is looked for among the ``NUCLEUS_HEAD``
likeliest tokens, the whole vocabulary sorted only for rows whose nucleus is larger); each choice
draws from its own ``torch.Generator`` seeded from ``(seed, choice index)``, so a seed gives the same
tokens whatever else is in the batch (up to the float rounding of a different batch size in the matrix
products; equal on the test model).

Prompt log-probs (``SamplingParams.prompt_logprobs``, teacher forcing): the prefill pass keeps the
logits of the scored prompt positions too, so ``Completion.prompt_logprobs`` costs no extra pass and the
request batches with everyone else's; with ``prompt_logprobs_last_n`` only the tail is scored and the
prompt's start may come from the prefix store.

Adapters: ``load_adapter(name, folder)`` installs a LoRA adapter (see :mod:`resonance_os.llm.adapters`)
between steps; requests name it, and rows of different adapters share a batch.
``unload_adapter(name)`` refuses new requests for it at once and removes it once its running
requests end.

Residual-stream additions (activation steering, :mod:`resonance_os.llm.steering`): a request may carry
``additions={layer: vector}``; each of its sequences gets its own vectors added to the output of those
decoder layers at every position, on prefill and on every decode step, whichever rows share the batch
with it as they come and go. A request's prompt keys/values are shared only with requests whose
additions are equal (a steered prompt's cache is not the unsteered one's); all-zero vectors are dropped,
so they are exactly the unsteered request. A step with no steered row runs no hook at all.

Precision: the model runs in ``EngineConfig.dtype`` (default :func:`~resonance_os.llm.precision.fast_dtype`:
float32 on a CPU without AMX). The engine owns the model it is given (casts it, replaces adapted
``Linear`` layers): pass a private copy.

Usage::

    engine = GenerationEngine(model, tokenizer).start()
    handle = engine.submit(engine.encode_chat([{"role": "user", "content": "Hi"}]), SamplingParams(n=4, seed=1))
    completion = handle.result()            # or: for deltas in handle: ...; async for deltas in handle.stream()
    engine.close()
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import queue
import secrets
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from resonance_os.llm.adapters import Adapter, AdapterError, RowAdapters, install, read_adapter, uninstall
from resonance_os.llm.causal_lm import cache_argument, eos_token_ids
from resonance_os.llm.detokenize import TextStream
from resonance_os.llm.errors import ConfigError, LLMError, PromptTooLongError
from resonance_os.llm.int8_weights import quantize_linears, weight_format
from resonance_os.llm.kv_slots import PrefixStore, SlotKV
from resonance_os.llm.precision import fast_dtype, parse_dtype
from resonance_os.llm.sampling_params import Choice, ChoiceDelta, Completion, SamplingParams, TokenLogprob
from resonance_os.llm.steering import decoder_layers, steering

log = logging.getLogger("resonance_os.llm.engine")

BASE = ""
"""The adapter name of the base model (no adapter)."""
SEED_MIX = 0x9E3779B97F4A7C15
THROUGHPUT_WINDOW_S = 10.0
NUCLEUS_HEAD = 512
"""Top-p looks for each row's nucleus among its likeliest ``NUCLEUS_HEAD`` tokens first (a top-k, not
a sort of the whole vocabulary); rows whose nucleus reaches past them are sorted whole."""


class EngineClosedError(LLMError):
    """The engine was closed (or failed) before the request finished."""

    http_status = 503


@dataclass
class EngineConfig:
    """max_batch: sequences decoded together (a request needs ``n`` of them; default 32).
    prefill_tokens: prompt tokens computed in one step at most, beyond the first prompt (default 2048).
    prefix_cache_bytes: memory for stored prompt prefixes (default 256 MiB). min_prefix_tokens: shorter
    prefixes are not shared (default 8). dtype: precision (default :func:`fast_dtype`). weights:
    ``"float"`` (the weights in ``dtype``) or ``"int8"`` (weight-only int8, :mod:`~resonance_os.llm.int8_weights`:
    a quarter of float32's bytes a step, numbers about 3% off float32's); default
    ``$RESONANCE_ENGINE_WEIGHTS`` or ``"float"``. A borrowed model is never changed."""

    max_batch: int = 32
    prefill_tokens: int = 2048
    prefix_cache_bytes: int = 256 * 2**20
    min_prefix_tokens: int = 8
    dtype: torch.dtype | str | None = None
    weights: str | None = None

    def __post_init__(self) -> None:
        for name in ("max_batch", "prefill_tokens", "min_prefix_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"EngineConfig.{name}={value!r} must be an integer >= 1")
        if not isinstance(self.prefix_cache_bytes, int) or self.prefix_cache_bytes < 0:
            raise ConfigError(f"EngineConfig.prefix_cache_bytes={self.prefix_cache_bytes!r} must be >= 0")
        if self.dtype is not None:
            self.dtype = parse_dtype(self.dtype)
        self.weights = weight_format(self.weights)


@dataclass
class EngineStats:
    """Counters since start and the current load (a snapshot)."""

    requests: int = 0
    prompt_tokens: int = 0
    prefill_tokens: int = 0
    prefix_hit_tokens: int = 0
    generated_tokens: int = 0
    decode_steps: int = 0
    waiting: int = 0
    running: int = 0
    tokens_per_s: float = 0.0

    @property
    def prefix_hit_rate(self) -> float:
        """Share of the prompt tokens of admitted choices that were not computed (prefix store or siblings)."""
        total = self.prefill_tokens + self.prefix_hit_tokens
        return self.prefix_hit_tokens / total if total else 0.0


class RequestHandle:
    """A submitted request: iterate it (or ``async for`` over :meth:`stream`) for lists of
    :class:`ChoiceDelta` as tokens arrive, or wait for the whole :class:`Completion` with
    :meth:`result` / :meth:`aresult`. :meth:`cancel` stops it (its sequences leave the batch)."""

    def __init__(self, prompt_ids: list[int], n: int) -> None:
        self.prompt_ids = prompt_ids
        self.choices = [Choice(i) for i in range(n)]
        self.submitted = time.perf_counter()
        self.first_token_at: float | None = None
        self.prefill_tokens = 0
        self.prompt_logprobs: list[float | None] | None = None
        self.cancelled = False
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._async_items: asyncio.Queue | None = None
        self._finished_choices = 0

    # ------------------------------------------------------------------ called by the engine thread
    def _put(self, item: Any) -> None:
        with self._lock:
            if self._loop is None:
                self._items.put(item)
                return
            try:
                self._loop.call_soon_threadsafe(self._async_items.put_nowait, item)
            except RuntimeError:  # the consumer's event loop is gone: nobody is listening
                self.cancelled = True

    def _push(self, deltas: list[ChoiceDelta]) -> None:
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        for delta in deltas:
            self.choices[delta.index].add(delta)
            self._finished_choices += delta.finish_reason is not None
        self._put(deltas)
        if self._finished_choices == len(self.choices):
            self._done.set()
            self._put(None)

    def _fail(self, error: BaseException) -> None:
        if self._done.is_set():
            return
        self._error = error
        self._done.set()
        self._put(error)

    # ------------------------------------------------------------------ called by the consumer
    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def ttft_s(self) -> float | None:
        """Seconds from submission to the first token (None before it)."""
        return None if self.first_token_at is None else self.first_token_at - self.submitted

    def cancel(self) -> None:
        """Stop generating (between steps); waiting consumers get what was generated so far."""
        self.cancelled = True

    def completion(self) -> Completion:
        return Completion(
            self.prompt_ids, self.choices, self.ttft_s, self.prefill_tokens, self.prompt_logprobs
        )

    def result(self, timeout: float | None = None) -> Completion:
        """Wait for the request to end; raises the engine's error if it failed, ``TimeoutError``."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the request did not finish within {timeout} s")
        if self._error is not None:
            raise self._error
        return self.completion()

    async def aresult(self) -> Completion:
        async for _ in self.stream():
            pass
        return self.completion()

    def __iter__(self) -> Iterator[list[ChoiceDelta]]:
        while True:
            item = self._items.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    async def stream(self) -> AsyncIterator[list[ChoiceDelta]]:
        """The deltas as they arrive, in the running event loop (consume it from one loop only)."""
        with self._lock:
            if self._loop is None:
                self._loop, self._async_items = asyncio.get_running_loop(), asyncio.Queue()
                while not self._items.empty():
                    self._async_items.put_nowait(self._items.get())
        while True:
            item = await self._async_items.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item


@dataclass
class _Request:
    handle: RequestHandle
    prompt: list[int]
    params: SamplingParams
    adapter: str
    group: str
    prefix_key: str
    additions: dict[int, torch.Tensor] | None = None  # {layer: (H,)}, none all-zero


@dataclass
class _Sequence:
    request: _Request
    index: int
    generator: torch.Generator
    text: TextStream
    cached: int = 0  # positions of this sequence in its KV slot
    last_token: int = -1
    generated: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    history: _History | None = None  # prompt and completion so far, when sampling looks at them


class _History:
    """The tokens of a sequence so far, indexed for the repetition penalty (the distinct tokens) and
    the n-gram ban (for each (n-1)-gram, the tokens that followed it)."""

    def __init__(self, tokens: list[int], n: int) -> None:
        self.tokens, self.n = list(tokens), n
        self.distinct = set(tokens)
        self.followers: dict[tuple[int, ...], set[int]] = {}
        for end in range(n, len(tokens) + 1) if n else ():
            self._index(end)

    def _index(self, end: int) -> None:
        gram = self.tokens[end - self.n : end]
        self.followers.setdefault(tuple(gram[:-1]), set()).add(gram[-1])

    def add(self, token: int) -> None:
        self.tokens.append(token)
        self.distinct.add(token)
        if self.n and len(self.tokens) >= self.n:
            self._index(len(self.tokens))

    def banned(self) -> list[int]:
        """Tokens that would repeat an n-gram already in the sequence."""
        if not self.n or len(self.tokens) < self.n - 1:
            return []
        return sorted(self.followers.get(tuple(self.tokens[len(self.tokens) - self.n + 1 :]), ()))


class GenerationEngine:
    """Serves ``model`` (a transformers causal LM) and its adapters; see the module docstring."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        config: EngineConfig | None = None,
        *,
        borrowed: bool = False,
    ) -> None:
        self.config = config or EngineConfig()
        if borrowed:  # a trainer's model: run it as it is, change nothing of it
            self.model, dtype = model, next(model.parameters()).dtype
        else:
            dtype = self.config.dtype or fast_dtype(next(model.parameters()).device)
            self.model = model.to(dtype).eval()
            self.model.requires_grad_(False)
            if self.config.weights == "int8":
                quantize_linears(self.model)
        self.dtype = dtype
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self._cache_kw = cache_argument(model)
        self.vocab_size = int(model.get_input_embeddings().weight.shape[0])  # the head may be wrapped
        self.hidden_size = int(model.get_input_embeddings().weight.shape[1])
        self.context_length = _context_length(model)
        self.eos_ids = eos_token_ids(model, tokenizer)
        self._plan = RowAdapters()
        self._kv = SlotKV()
        self._prefixes = PrefixStore(self.config.prefix_cache_bytes, self.config.min_prefix_tokens)
        self._adapters: dict[str, int] = {}  # name -> version (prefix-store key)
        self._retiring: set[str] = set()
        self._versions = itertools.count(1)
        self._lock = threading.Condition()
        self._inbox: deque[_Request] = deque()
        self._commands: deque[tuple[Callable[[], Any], Future]] = deque()
        self._waiting: dict[str, deque[_Request]] = {}
        self._turn: deque[str] = deque()
        self._running: list[_Sequence] = []
        self._stats = EngineStats()
        self._recent: deque[tuple[float, int]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False

    @classmethod
    def from_pretrained(cls, folder: str | Path, config: EngineConfig | None = None) -> GenerationEngine:
        """An engine over a local Hugging Face model folder (never downloads), loaded in the engine's dtype."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        root = Path(folder)
        if not (root / "config.json").is_file():
            raise LLMError(
                f"no Hugging Face model folder at {root} (config.json missing); pass a local folder"
            )
        config = config or EngineConfig()
        dtype = config.dtype or fast_dtype()
        tokenizer = AutoTokenizer.from_pretrained(str(root), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(root), local_files_only=True, dtype=dtype)
        return cls(model, tokenizer, config)

    # ------------------------------------------------------------------------------- lifecycle
    def start(self) -> GenerationEngine:
        """Start the stepping thread (idempotent); returns the engine."""
        with self._lock:
            if self._closed:
                raise EngineClosedError("the engine is closed; build a new one")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="generation-engine", daemon=True)
                self._thread.start()
        return self

    def close(self) -> None:
        """Stop the thread; unfinished requests fail with ``EngineClosedError``."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._fail_all(EngineClosedError("the engine was closed before the request finished"))

    def __enter__(self) -> GenerationEngine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------- requests
    def encode(self, text: str) -> list[int]:
        """Token ids of plain text (with the tokenizer's special tokens, as ``tokenizer(text)``)."""
        return list(self.tokenizer(text)["input_ids"])

    def encode_chat(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        """Token ids of chat messages through the tokenizer's chat template, with the generation prompt."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise LLMError(
                "the served model's tokenizer has no chat template; use completions with plain text"
            )
        text = self.tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def check(
        self, prompt_ids: Sequence[int], params: SamplingParams, adapter: str | None = None,
        additions: Mapping[int, Any] | None = None,
    ) -> None:  # fmt: skip
        """Raise the error :meth:`submit` would raise for this request (``ConfigError``,
        ``PromptTooLongError``, ``AdapterError``), without submitting it."""
        self._checked_additions(additions)
        if not prompt_ids:
            raise ConfigError("the prompt is empty; send at least one token")
        if any(
            isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < self.vocab_size for t in prompt_ids
        ):
            raise ConfigError(f"prompt token ids must be integers in [0, {self.vocab_size})")
        if params.n > self.config.max_batch:
            raise ConfigError(
                f"n={params.n} is more than the {self.config.max_batch} sequences a batch holds"
            )
        last_n = params.prompt_logprobs_last_n
        if last_n is not None and last_n > len(prompt_ids) - 1:
            raise ConfigError(
                f"prompt_logprobs_last_n={last_n} must be at most the prompt's {len(prompt_ids)} tokens "
                "minus one (the first token has no log-prob)"
            )
        total = len(prompt_ids) + params.max_tokens
        if self.context_length is not None and total > self.context_length:
            raise PromptTooLongError(
                f"the prompt has {len(prompt_ids)} tokens and max_tokens={params.max_tokens}: {total} > the "
                f"model's context of {self.context_length} tokens; shorten the prompt or lower max_tokens"
            )
        if adapter and adapter not in self.adapters():
            raise AdapterError(
                f"no adapter named {adapter!r} is loaded; load it with load_adapter(name, folder)"
            )

    def submit(
        self, prompt_ids: Sequence[int], params: SamplingParams | None = None, *, adapter: str | None = None,
        group: str = "", additions: Mapping[int, Any] | None = None,
    ) -> RequestHandle:  # fmt: skip
        """Queue a request (thread-safe) and return its handle. ``adapter``: a loaded adapter's name
        (None: the base model); ``group``: requests are admitted round-robin over groups;
        ``additions``: ``{decoder layer (0-based): vector of hidden size}`` added to that layer's output
        for this request's sequences (activation steering; see the module docstring)."""
        params = params or SamplingParams()
        prompt = list(prompt_ids)
        self.check(prompt, params, adapter)
        steer = self._checked_additions(additions)
        handle = RequestHandle(prompt, params.n)
        name = adapter or BASE
        with self._lock:
            if self._closed:
                raise EngineClosedError("the engine is closed; build a new one")
            if name != BASE and (name not in self._adapters or name in self._retiring):
                raise AdapterError(
                    f"no adapter named {name!r} is loaded; load it with load_adapter(name, folder)"
                )
            key = f"{name}#{self._adapters.get(name, 0)}" + _additions_key(steer)
            request = _Request(handle, prompt, params, name, group, key, steer)
            self._inbox.append(request)
            self._lock.notify_all()
        return handle

    def _checked_additions(self, additions: Mapping[int, Any] | None) -> dict[int, torch.Tensor] | None:
        """``additions`` as float32 vectors on the model's device, the all-zero ones dropped (None when
        none is left); ``ConfigError`` naming the problem for a bad layer or vector."""
        if additions is None:
            return None
        if not isinstance(additions, Mapping):
            raise ConfigError(f"additions must be a mapping of decoder layer to vector, got {additions!r}")
        if not additions:
            return None
        count = len(decoder_layers(self.model))
        checked = {}
        for layer in additions:
            if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < count:
                raise ConfigError(
                    f"additions: layer must be a whole number from 0 to {count - 1}, got {layer!r}"
                )
        for layer, vector in sorted(additions.items()):  # in layer order: equal additions, equal prefix key
            try:
                vector = torch.as_tensor(vector).detach().to(device=self.device, dtype=torch.float32)
            except (TypeError, ValueError, RuntimeError) as exc:
                raise ConfigError(f"additions[{layer}] is not a vector of numbers ({exc})") from None
            if tuple(vector.shape) != (self.hidden_size,):
                raise ConfigError(
                    f"additions[{layer}] has shape {tuple(vector.shape)}; expected ({self.hidden_size},), "
                    "the model's hidden size"
                )
            if not torch.isfinite(vector).all():
                raise ConfigError(f"additions[{layer}] has a NaN or infinite entry")
            if torch.any(vector):
                checked[layer] = vector
        return checked or None

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams | None = None,
        *,
        adapter: str | None = None,
    ) -> list[Completion]:
        """Submit every prompt and wait for all (the engine must be started)."""
        handles = [self.submit(p, params, adapter=adapter) for p in prompts]
        return [h.result() for h in handles]

    def run_pending(self) -> None:
        """Run steps in the calling thread until every submitted request has finished: the engine
        without its thread, as a trainer's sampler uses it (``borrowed=True``, see
        ``llm.sampling.sample_ids``). A failed step fails the requests and raises its error."""
        if self._thread is not None:
            raise LLMError("run_pending drives an engine whose thread is not started; wait on the handles")
        with torch.inference_mode():
            while True:
                with self._lock:
                    self._take_inbox()
                if not (self._running or self._turn):
                    return
                try:
                    self._step()
                except Exception as exc:
                    self._fail_all(LLMError(f"generation failed: {type(exc).__name__}: {exc}"))
                    raise

    # ------------------------------------------------------------------------------- adapters
    def adapters(self) -> list[str]:
        """Names of the loaded adapters (those being unloaded excluded)."""
        with self._lock:
            return sorted(n for n in self._adapters if n not in self._retiring)

    def load_adapter(self, name: str, source: str | Path | Adapter) -> None:
        """Load (or replace) adapter ``name`` from a folder (:func:`read_adapter`) or an ``Adapter``."""
        if not isinstance(name, str) or not name or name == BASE:
            raise ConfigError(f"adapter name {name!r} must be a non-empty string")
        adapter = source if isinstance(source, Adapter) else read_adapter(source)

        def apply() -> None:
            install(self.model, name, adapter, self._plan)
            self._prefixes.drop(f"{name}#{self._adapters.get(name, 0)}")
            self._adapters[name] = next(self._versions)
            self._retiring.discard(name)

        self._call(apply)

    def unload_adapter(self, name: str) -> None:
        """Refuse new requests for ``name`` now; remove its weights once its running requests end."""
        with self._lock:
            if name not in self._adapters or name in self._retiring:
                raise AdapterError(f"no adapter named {name!r} is loaded")
            self._retiring.add(name)
            self._lock.notify_all()
        if self._thread is None:
            self._call(self._retire)

    def _call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` in the engine thread between steps (or here, when the thread is not running)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                return fn()
            future: Future = Future()
            self._commands.append((fn, future))
            self._lock.notify_all()
        return future.result()

    def _retire(self) -> None:
        busy = {s.request.adapter for s in self._running}
        busy |= {r.adapter for q in self._waiting.values() for r in q}
        with self._lock:
            busy |= {r.adapter for r in self._inbox}
            done = [n for n in self._retiring if n not in busy]
            for name in done:
                self._retiring.discard(name)
                self._prefixes.drop(f"{name}#{self._adapters.pop(name)}")
        for name in done:
            uninstall(self.model, name)

    # ------------------------------------------------------------------------------- stats
    def stats(self) -> EngineStats:
        """A snapshot of the counters, the queue depth, the batch size and recent tokens/s."""
        with self._lock:
            now = time.perf_counter()
            while self._recent and self._recent[0][0] < now - THROUGHPUT_WINDOW_S:
                self._recent.popleft()
            snapshot = EngineStats(**{k: getattr(self._stats, k) for k in EngineStats.__dataclass_fields__})
            snapshot.waiting = len(self._inbox) + sum(len(q) for q in self._waiting.values())
            snapshot.running = len(self._running)
            if self._recent:
                span = max(now - self._recent[0][0], 1e-3)
                snapshot.tokens_per_s = sum(n for _, n in self._recent) / span
        return snapshot

    # ------------------------------------------------------------------------------- the loop
    def _loop(self) -> None:
        with torch.inference_mode():
            while True:
                with self._lock:
                    while not (self._closed or self._inbox or self._commands or self._running or self._turn):
                        self._lock.wait()
                    if self._closed:
                        return
                    self._take_inbox()
                    commands = list(self._commands)
                    self._commands.clear()
                for fn, future in commands:
                    try:
                        future.set_result(fn())
                    except BaseException as exc:  # handed to the caller of _call
                        future.set_exception(exc)
                try:
                    self._step()
                    if self._retiring:
                        self._retire()
                except Exception as exc:  # a bug or out of memory: fail what ran, keep serving
                    log.exception("generation step failed")
                    self._fail_running(LLMError(f"generation failed: {type(exc).__name__}: {exc}"))

    def _take_inbox(self) -> None:
        """Move submitted requests to their group's waiting queue (the caller holds the lock)."""
        while self._inbox:
            request = self._inbox.popleft()
            if request.group not in self._waiting:
                self._waiting[request.group] = deque()
                self._turn.append(request.group)
            self._waiting[request.group].append(request)

    def _fail_running(self, error: BaseException) -> None:
        for seq in self._running:
            seq.request.handle._fail(error)
        self._running = []
        self._kv.clear()
        self._prefixes = PrefixStore(self.config.prefix_cache_bytes, self.config.min_prefix_tokens)

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            pending = list(self._inbox) + [r for q in self._waiting.values() for r in q]
            self._inbox.clear()
            self._waiting.clear()
            self._turn.clear()
        for request in pending:
            request.handle._fail(error)
        self._fail_running(error)

    def _step(self) -> None:
        self._drop_cancelled()
        budget = self.config.prefill_tokens
        while budget > 0:  # rounds: a prompt deferred for a shared prefix finds it stored in the next
            admitted, cost = self._admit(budget, first=budget == self.config.prefill_tokens)
            if not admitted:
                break
            self._prefill(admitted)
            budget -= cost
        if self._running:
            self._decode()

    def _drop_cancelled(self) -> None:
        for group, waiting in list(self._waiting.items()):
            for request in [r for r in waiting if r.handle.cancelled]:
                waiting.remove(request)
                request.handle._fail(EngineClosedError("the request was cancelled"))
            if not waiting:
                del self._waiting[group]
                self._turn.remove(group)
        cancelled = [s for s in self._running if s.request.handle.cancelled]
        for seq in cancelled:
            seq.finish_reason = "cancelled"
        if cancelled:
            self._compact()  # out of the batch before anyone hears of it
        for seq in cancelled:
            seq.request.handle._fail(EngineClosedError("the request was cancelled"))

    def _next_waiting(self, skip: set[int]) -> _Request | None:
        """The next request in round-robin order over groups, not in ``skip``."""
        for _ in range(len(self._turn)):
            group = self._turn[0]
            self._turn.rotate(-1)
            for request in self._waiting[group]:
                if id(request) not in skip:
                    return request
                break
        return None

    def _admit(self, budget: int, first: bool) -> tuple[list[tuple[_Request, int, Any]], int]:
        """Requests to prefill in one pass, as (request, tokens reused from the prefix store, its entry),
        and the prompt tokens they compute: within ``budget`` tokens, except that the step's ``first``
        pass always takes one request."""
        free = self.config.max_batch - len(self._running)
        spent = width = columns = 0
        admitted: list[tuple[_Request, int, Any]] = []
        skip: set[int] = set()
        while free > 0:
            request = self._next_waiting(skip)
            if request is None:
                break
            skip.add(id(request))
            if request.params.n > free:
                break  # wait for room rather than starve a large n
            reused, entry = self._prefixes.longest(request.prefix_key, request.prompt, _reusable(request))
            if any(self._shares_prefix(request, other, reused) for other, _, _ in admitted):
                continue  # the next pass, when the other's prompt is in the prefix store
            cost = len(request.prompt) - reused
            if (admitted or not first) and spent + cost > budget:
                break
            # the pass keeps rows x columns logit vectors: prompt log-probs widen it, so bound it too
            wider, more = max(width, cost), columns + _scored(request) + 1
            scoring = more > len(admitted) + 1
            if admitted and scoring and (len(admitted) + 1) * min(wider, more) > self.config.prefill_tokens:
                break
            width, columns = wider, more
            self._waiting[request.group].remove(request)
            if not self._waiting[request.group]:
                del self._waiting[request.group]
                self._turn.remove(request.group)
            admitted.append((request, reused, entry))
            free -= request.params.n
            spent += cost
        return admitted, spent

    def _shares_prefix(self, a: _Request, b: _Request, reused: int) -> bool:
        """Whether ``a`` starts with more of ``b``'s prompt than the ``reused`` tokens it finds stored
        (at least ``min_prefix_tokens``): then ``a`` waits for ``b``'s prompt to be stored."""
        if a.prefix_key != b.prefix_key:
            return False
        n = max(self.config.min_prefix_tokens, reused + 1)
        return len(a.prompt) > n and len(b.prompt) >= n and a.prompt[:n] == b.prompt[:n]

    def _set_plan(self, adapters: list[str]) -> None:
        names = sorted(set(adapters) - {BASE})
        if not names:
            self._plan.groups = []
        elif len(names) == 1 and all(a == names[0] for a in adapters):
            self._plan.groups = [(names[0], slice(0, len(adapters)))]
        else:
            self._plan.groups = [
                (name, torch.tensor([i for i, a in enumerate(adapters) if a == name], device=self.device))
                for name in names
            ]

    def _row_additions(self, requests: list[_Request]) -> dict[int, torch.Tensor]:
        """``{layer: (rows, H)}``: each row's own addition at every layer some row is steered at (zeros
        for the rows not steered there); empty when no row is steered."""
        layers = sorted({layer for r in requests if r.additions for layer in r.additions})
        if not layers:
            return {}
        zero = torch.zeros(self.hidden_size, device=self.device)
        return {
            layer: torch.stack([(r.additions or {}).get(layer, zero) for r in requests]) for layer in layers
        }

    def _forward(
        self,
        slots: list[int],
        tokens: torch.Tensor,
        positions: torch.Tensor,
        requests: list[_Request],
        keep: Any,
    ) -> torch.Tensor:
        """One forward pass of rows ``slots`` (row i runs ``requests[i]``'s adapter and additions):
        ``tokens`` and ``positions`` are (rows, q); returns logits."""
        kv_len = int(positions.max()) + 1
        self._kv.reserve(max(slots) + 1, kv_len)
        keys = torch.arange(kv_len, device=self.device)
        allowed = keys[None, None, :] <= positions[:, :, None]  # (rows, q, kv): causal, per-row length
        mask = torch.zeros(allowed.shape, dtype=self.dtype, device=self.device)
        mask.masked_fill_(~allowed, torch.finfo(self.dtype).min)
        self._set_plan([r.adapter for r in requests])
        additions = self._row_additions(requests)
        try:
            with steering(self.model, additions) if additions else nullcontext():
                out = self.model(
                    input_ids=tokens, attention_mask=mask[:, None], position_ids=positions, use_cache=True,
                    logits_to_keep=keep, **{self._cache_kw: self._kv.forward_cache(slots, positions, kv_len)},
                )  # fmt: skip
        finally:
            self._plan.groups = []
        return out.logits.float()

    def _prefill(self, admitted: list[tuple[_Request, int, Any]]) -> None:
        start = len(self._running)
        slots, rows = [], []
        for request, _, _ in admitted:
            slots.append(start)
            start += request.params.n
        self._kv.reserve(start, max(len(r.prompt) for r, _, _ in admitted) + 1)
        width = max(len(r.prompt) - reused for r, reused, _ in admitted)
        tokens = torch.full((len(admitted), width), int(self.tokenizer.pad_token_id or 0), dtype=torch.long)
        positions = torch.empty((len(admitted), width), dtype=torch.long)
        for row, ((request, reused, entry), slot) in enumerate(zip(admitted, slots)):
            if entry is not None:
                self._kv.write(slot, entry.layers, reused)
            new = request.prompt[reused:]
            tokens[row, : len(new)] = torch.tensor(new)
            positions[row] = torch.arange(reused, reused + width)
            rows.append(len(new) - 1)
        scored = [_scored(request) for request, _, _ in admitted]
        wanted = set(rows)
        for row, n in enumerate(scored):
            wanted.update(range(rows[row] - n, rows[row]))
        last = sorted(wanted)
        column = {q: i for i, q in enumerate(last)}
        logits = self._forward(
            slots, tokens.to(self.device), positions.to(self.device), [r for r, _, _ in admitted],
            torch.tensor(last, device=self.device),
        )  # fmt: skip
        picked = logits[torch.arange(len(admitted)), torch.tensor([column[r] for r in rows])]
        for row, ((request, _, _), n) in enumerate(zip(admitted, scored)):
            if request.params.prompt_logprobs:
                request.handle.prompt_logprobs = self._prompt_logprobs(
                    request.prompt, logits[row], [column[q] for q in range(rows[row] - n, rows[row])]
                )
        new_sequences: list[_Sequence] = []
        with self._lock:
            for request, reused, _ in admitted:
                computed = len(request.prompt) - reused
                self._stats.requests += 1
                self._stats.prompt_tokens += len(request.prompt)
                self._stats.prefill_tokens += computed
                # the n-1 siblings reuse the whole prompt
                self._stats.prefix_hit_tokens += reused + (request.params.n - 1) * len(request.prompt)
                request.handle.prefill_tokens = computed
        for (request, _, _), slot in zip(admitted, slots):
            length = len(request.prompt)
            self._prefixes.add(request.prefix_key, request.prompt, self._kv.read(slot, length))
            for i in range(request.params.n):
                if i:
                    self._kv.move(slot, slot + i, length)
                new_sequences.append(self._sequence(request, i, length))
        rows_logits = torch.cat(
            [picked[row : row + 1].expand(r.params.n, -1) for row, (r, _, _) in enumerate(admitted)]
        )
        self._running += new_sequences
        self._sample_and_emit(new_sequences, rows_logits)

    def _prompt_logprobs(
        self, prompt: list[int], logits: torch.Tensor, columns: list[int]
    ) -> list[float | None]:
        """The last ``len(columns)`` prompt tokens' log-probs from the logits at ``columns`` (the
        positions before them), None for the tokens before."""
        if not columns:
            return [None] * len(prompt)
        targets = torch.tensor(prompt[len(prompt) - len(columns) :], device=logits.device)
        logp = logits[torch.tensor(columns, device=logits.device)].log_softmax(-1)
        scores = logp.gather(-1, targets[:, None]).squeeze(-1).tolist()
        return [None] * (len(prompt) - len(scores)) + scores

    def _sequence(self, request: _Request, index: int, length: int) -> _Sequence:
        seed = request.params.seed
        if seed is None:
            seed = secrets.randbits(62)
        generator = torch.Generator(device=self.device).manual_seed((seed * SEED_MIX + index) % 2**63)
        stream = TextStream(self.tokenizer, request.params.stop)
        params = request.params
        history = _History(request.prompt, params.no_repeat_ngram_size) if params.needs_history else None
        return _Sequence(request, index, generator, stream, cached=length, history=history)

    def _decode(self) -> None:
        running = self._running
        tokens = torch.tensor([[s.last_token] for s in running], device=self.device)
        positions = torch.tensor([[s.cached] for s in running], device=self.device)
        logits = self._forward(list(range(len(running))), tokens, positions, [s.request for s in running], 1)
        for seq in running:
            seq.cached += 1
        self._stats.decode_steps += 1
        self._sample_and_emit(running, logits[:, -1])

    def _sample_and_emit(self, sequences: list[_Sequence], logits: torch.Tensor) -> None:
        """Pick each sequence's next token from its logits row, send the deltas, retire finished ones."""
        tokens, logprobs, tops = self._sample(sequences, logits)
        by_request: dict[int, tuple[RequestHandle, list[ChoiceDelta]]] = {}
        for row, seq in enumerate(sequences):
            params = seq.request.params
            token = tokens[row]
            seq.last_token = token
            seq.generated.append(token)
            if seq.history is not None:
                seq.history.add(token)
            text = seq.text.push(token)
            if (token in self.eos_ids and not params.ignore_eos) or token in params.stop_token_ids:
                seq.finish_reason = "stop"
            elif seq.text.stopped:
                seq.finish_reason = "stop"
            elif len(seq.generated) >= params.max_tokens:
                seq.finish_reason = "length"
            if seq.finish_reason is not None and not seq.text.stopped:
                text += seq.text.finish()
            entry = [TokenLogprob(token, logprobs[row], tops[row] if tops else [])] if params.logprobs else []
            delta = ChoiceDelta(seq.index, [token], text, entry, seq.finish_reason)
            by_request.setdefault(id(seq.request), (seq.request.handle, []))[1].append(delta)
        with self._lock:
            self._stats.generated_tokens += len(sequences)
            self._recent.append((time.perf_counter(), len(sequences)))
        for handle, deltas in by_request.values():
            handle._push(deltas)
        if any(s.finish_reason is not None for s in sequences):
            self._compact()

    def _sample(
        self, sequences: list[_Sequence], logits: torch.Tensor
    ) -> tuple[list[int], list[float], list[list[tuple[int, float]]]]:
        """Next tokens (one per row), their log-probs, and the top log-probs where asked."""
        params = [s.request.params for s in sequences]
        for row, (seq, p) in enumerate(zip(sequences, params)):
            if p.penalised and seq.generated:
                counts = torch.bincount(torch.tensor(seq.generated), minlength=logits.shape[1]).to(logits)
                logits[row] -= p.presence_penalty * (counts > 0) + p.frequency_penalty * counts
            if seq.history is not None:
                if p.repetition_penalty != 1:
                    seen = torch.tensor(sorted(seq.history.distinct), device=logits.device)
                    old = logits[row, seen]
                    logits[row, seen] = torch.where(
                        old > 0, old / p.repetition_penalty, old * p.repetition_penalty
                    )
                banned = seq.history.banned()
                if banned:
                    logits[row, banned] = float("-inf")
        temperature = torch.tensor([p.temperature or 1.0 for p in params], device=logits.device)
        scaled = logits / temperature[:, None]
        logp = scaled.log_softmax(-1)
        chosen = scaled.argmax(-1)
        sampled = [row for row, p in enumerate(params) if p.temperature > 0]
        if sampled:
            index = torch.tensor(sampled, device=logits.device)
            cut = _cut(scaled[index], [params[r] for r in sampled])
            cdf = cut.softmax(-1).cumsum(-1)
            draws = torch.stack(
                [torch.rand((), generator=sequences[r].generator, device=logits.device) for r in sampled]
            )
            picks = torch.searchsorted(cdf, (draws * cdf[:, -1])[:, None], right=True).squeeze(-1)
            chosen[index] = picks.clamp(max=logits.shape[1] - 1)
        token_logp = logp.gather(-1, chosen[:, None]).squeeze(-1).tolist()
        most = max((p.top_logprobs for p in params if p.logprobs), default=0)
        tops: list[list[tuple[int, float]]] = []
        if most:
            values, ids = logp.topk(most, dim=-1)
            tops = [
                list(zip(ids[r, : p.top_logprobs].tolist(), values[r, : p.top_logprobs].tolist()))
                for r, p in enumerate(params)
            ]
        return chosen.tolist(), token_logp, tops

    def _compact(self) -> None:
        """Remove finished sequences; move the last running ones into the freed slots (slots stay 0..k-1)."""
        keep = [s for s in self._running if s.finish_reason is None]
        if len(keep) == len(self._running):
            return
        old_slot = {id(s): i for i, s in enumerate(self._running)}
        for new, seq in enumerate(keep):
            old = old_slot[id(seq)]
            if old != new:
                self._kv.move(old, new, seq.cached)
        self._running = keep


def _additions_key(additions: dict[int, torch.Tensor] | None) -> str:
    """The prefix-store key suffix of a request's additions: requests share stored prompts only when
    their additions are equal ("" for none)."""
    if not additions:
        return ""
    digest = hashlib.blake2b(digest_size=16)
    for layer, vector in additions.items():
        digest.update(f"{layer}:".encode())
        digest.update(vector.cpu().numpy().tobytes())
    return f"+add:{digest.hexdigest()}"


def _scored(request: _Request) -> int:
    """How many of the request's prompt tokens get a log-prob (the first never does)."""
    params = request.params
    if not params.prompt_logprobs:
        return 0
    whole = len(request.prompt) - 1
    return whole if params.prompt_logprobs_last_n is None else min(params.prompt_logprobs_last_n, whole)


def _reusable(request: _Request) -> int:
    """Prompt tokens that may come from the prefix store: all but the last (its logits pick the first
    token) and all but the positions whose logits score the prompt."""
    return len(request.prompt) - 1 - _scored(request)


def _cut(scaled: torch.Tensor, params: list[SamplingParams]) -> torch.Tensor:
    """Logits outside each row's top-k and top-p nucleus set to -inf (the most likely token always kept)."""
    ks = [p.top_k for p in params]
    if any(ks):
        largest = max(ks)
        kth = scaled.topk(min(largest, scaled.shape[1]), dim=-1).values
        for row, k in enumerate(ks):
            if k and k < scaled.shape[1]:
                scaled[row] = scaled[row].masked_fill(scaled[row] < kth[row, k - 1], float("-inf"))
    rows = [r for r, p in enumerate(params) if p.top_p < 1]
    if rows:
        index = torch.tensor(rows, device=scaled.device)
        part = scaled[index]
        top_p = torch.tensor([params[r].top_p for r in rows], device=scaled.device)
        scaled[index] = part.masked_fill(~nucleus(part.softmax(-1), top_p), float("-inf"))
    return scaled


def nucleus(probs: torch.Tensor, top_p: torch.Tensor, head: int = NUCLEUS_HEAD) -> torch.Tensor:
    """``(rows, V)`` bool: each row's top-p nucleus (Holtzman et al. 2020), the likeliest tokens whose
    probability mass before them is below ``top_p[row]`` (the likeliest always in). Found among the
    ``head`` likeliest tokens (``topk``) where it ends there, by a sort of the whole row elsewhere."""
    k = min(head, probs.shape[1])
    values, order = probs.topk(k, dim=-1)
    inside = values.cumsum(-1) - values < top_p[:, None]
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, inside)
    longer = torch.nonzero(inside[:, -1])[:, 0] if k < probs.shape[1] else []
    if len(longer):  # the head's last token is in: the nucleus may go on past the head
        values, order = probs[longer].sort(dim=-1, descending=True)
        inside = values.cumsum(-1) - values < top_p[longer, None]
        keep[longer] = torch.zeros_like(inside).scatter(-1, order, inside)
    return keep


def _context_length(model: torch.nn.Module) -> int | None:
    cfg = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
