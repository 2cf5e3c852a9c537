"""Sampling on a vLLM server: a trainer's completions drawn by an OpenAI-compatible server with vLLM's
extensions, and the trained LoRA adapter synced to it after each update.

The protocol followed is vLLM 0.34.0's (``openai_wire.VLLM_PROTOCOL``); ``resonance serve`` speaks the
same routes (docs/serving.md), so one configuration works against either:

- ``POST {base}/completions`` with ``prompt`` as token ids, ``n``, ``temperature``, ``top_p``,
  ``max_tokens``, ``seed``, ``stop``, ``logprobs: 0`` (the sampled token's log-prob) and
  ``return_token_ids: true``: each choice carries ``token_ids`` (the completion's exact ids, EOS
  included) and ``prompt_token_ids``; ``logprobs.token_logprobs`` are the sampled tokens' log-probs.
  vLLM reports them after temperature only when started with ``--logprobs-mode processed_logprobs``
  (its default, ``raw_logprobs``, is before temperature); the log-prob probe below tells the two apart.
- ``POST {base}/load_lora_adapter`` ``{"lora_name", "lora_path", "load_inplace": true}``: vLLM needs
  ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`` and ``--enable-lora``; a name already loaded is refused
  unless ``load_inplace`` is true. Each version is written to a new folder, because vLLM does not drop
  prefix-cache blocks computed with an adapter's old weights when it is reloaded from the same path.

Each sync writes the policy's adapter in peft's format (``adapter_config.json`` and
``adapter_model.safetensors``) to ``<folder>/<adapter>/v<version>`` in one rename, asks the server to
load it (``<server_folder>/<adapter>/v<version>``: the same folder as the server sees it) and then
removes all but the last two versions. The trainer treats the server as a sampler whose log-probs are
not its own (``GRPOConfig.rollout_correction``), as for ``rollout_dtype``.
"""

from __future__ import annotations

import math
import shutil
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

import httpx
import torch

from resonance_os.llm.causal_lm import eos_token_ids
from resonance_os.llm.errors import ConfigError, LLMError
from resonance_os.llm.openai_wire import VLLM_PROTOCOL, error_message
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling import PROMPT_SEED_MIX, SampledRow, Samples, samples_from_rows
from resonance_os.rl.folders import replace_folder

PROBE_TEXT = "The quick brown fox, 12 résumés and\ta naïve café!\nthe cat sat on the mat"
"""Tokenized by the server and by the policy's tokenizer: different ids mean a different base model."""
PROBE_TOKENS = 8
KEEP_VERSIONS = 2
RETRY_STATUSES = (429, 503)


class RolloutServerError(LLMError):
    """The rollout server cannot be reached, refuses a request, or is not the policy's model."""

    http_status = 502


class AdapterMissingError(RolloutServerError):
    """The server does not know the model asked for (a restarted vLLM forgets adapters loaded at run time)."""


class RemoteSampler:
    """Samples a trainer's completions on a vLLM-compatible server and syncs its LoRA adapter there.

    Args:
        base_url: the server's OpenAI base URL, e.g. ``http://gpu-box:8000/v1``.
        adapter: the name the trained adapter is served under (``model`` of every request).
        folder: a folder this process writes the adapter versions to and the server reads.
        server_folder: the same folder as the server sees it (None: the same path).
        api_key: sent as ``Authorization: Bearer`` (vLLM's ``--api-key``; a tenant key of ``resonance
            serve``); None sends none.
        timeout: seconds a request may take (a step's sampling included).
        concurrency: prompts sampled at once (one request per prompt, ``n`` completions each).
        logprob_tolerance: the largest mean |server - policy| log-prob per token the start-up probe
            accepts (a server in bf16 differs by ~0.01-0.05; another model by whole nats).
    """

    def __init__(
        self,
        base_url: str,
        adapter: str,
        folder: str | Path,
        *,
        server_folder: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        concurrency: int = 8,
        logprob_tolerance: float = 0.25,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"rollout server URL {base_url!r} must start with http:// or https://")
        self.base_url = base_url.rstrip("/")
        self.adapter = adapter
        self.folder = Path(folder)
        self.server_folder = PurePosixPath(server_folder or self.folder.resolve().as_posix())
        self.timeout = float(timeout)
        self.concurrency = max(1, int(concurrency))
        self.logprob_tolerance = float(logprob_tolerance)
        self.version: int | None = None
        """The weights version last loaded on the server (the trainer's update count), None before."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(self.timeout, connect=10.0))

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------------------------ HTTP
    def _post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        return self._call("POST", route, body)

    def _call(self, method: str, route: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """One request; 429/503 are retried (after ``Retry-After``) until ``timeout``; a transport
        failure or timeout is a ``RolloutServerError`` naming the fix."""
        url = f"{self.base_url}/{route}"
        deadline = time.monotonic() + self.timeout
        wait = 0.25
        while True:
            try:
                response = self._http.request(method, url, json=body)
            except httpx.TimeoutException:
                raise RolloutServerError(
                    f"the rollout server did not answer {method} {url} within {self.timeout:g} s; raise "
                    "GRPOConfig.rollout_server_timeout, or give the server more capacity"
                ) from None
            except httpx.TransportError as exc:
                raise RolloutServerError(
                    f"cannot reach the rollout server at {self.base_url} ({type(exc).__name__}: {exc}); start "
                    "it (vLLM: `vllm serve MODEL --enable-lora` with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True) "
                    "or fix GRPOConfig.rollout_server"
                ) from None
            if response.status_code not in RETRY_STATUSES or time.monotonic() + wait > deadline:
                break
            try:
                pause = float(response.headers.get("Retry-After", wait))
            except ValueError:
                pause = wait
            time.sleep(min(max(pause, 0.05), max(deadline - time.monotonic(), 0.0)))
            wait = min(wait * 2, 5.0)
        if response.status_code in (401, 403):
            raise RolloutServerError(
                f"the rollout server at {self.base_url} refused the API key ({error_message(response)}); "
                "set RESONANCE_ROLLOUT_API_KEY to its key (vLLM: --api-key; resonance serve: a tenant key)"
            )
        return response

    # ------------------------------------------------------------------------------ checks
    def connect(self, policy: LMPolicy) -> None:
        """Check that the server answers, returns token ids and tokenizes as the policy does."""
        listed = self._call("GET", "models")
        if listed.status_code != 200:
            raise RolloutServerError(
                f"GET {self.base_url}/models answered {listed.status_code} ({error_message(listed)}); "
                "GRPOConfig.rollout_server must be the server's OpenAI base URL, ending in /v1"
            )
        try:
            base = listed.json()["data"][0]["id"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise RolloutServerError(
                f"GET {self.base_url}/models did not list a model; is {self.base_url} an OpenAI API?"
            ) from None
        probe = self._post(
            "completions",
            {
                "model": base,
                "prompt": PROBE_TEXT,
                "max_tokens": 1,
                "temperature": 0,
                "return_token_ids": True,
            },
        )
        choice = self._first_choice(probe, base)
        server_ids = choice.get("prompt_token_ids")
        if not isinstance(server_ids, list):
            raise RolloutServerError(
                f"the server at {self.base_url} returned no token ids (return_token_ids); it is not "
                f"vLLM-compatible (a plain OpenAI API?). Use vLLM (this client follows {VLLM_PROTOCOL}) or "
                "resonance serve"
            )
        tokenizer = policy.tokenizer
        ours = [tokenizer(PROBE_TEXT, add_special_tokens=s)["input_ids"] for s in (True, False)]
        if server_ids not in ours:
            raise RolloutServerError(
                f"the server's model {base!r} tokenizes a probe text as {server_ids[:12]}..., the policy's "
                f"tokenizer as {ours[0][:12]}...: the server serves another base model; serve the policy's"
            )

    def _first_choice(self, response: httpx.Response, model: str) -> dict[str, Any]:
        if response.status_code == 404:
            raise AdapterMissingError(
                f"the rollout server has no model {model!r} ({error_message(response)}); it must serve the "
                "policy's base model with LoRA enabled (vLLM: --enable-lora --max-lora-rank >= the rank)"
            )
        if response.status_code != 200:
            raise RolloutServerError(
                f"the rollout server answered {response.status_code} to a completion request: "
                f"{error_message(response)}"
            )
        try:
            return response.json()["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise RolloutServerError(
                f"the rollout server's completion answer has no choices: {response.text[:200]}"
            ) from None

    def check_logprobs(self, policy: LMPolicy, prompt_ids: Sequence[int], temperature: float) -> float:
        """Sample a few tokens on the server and compare its log-probs with the policy's own; returns
        the mean |difference| per token, raising when it is above ``logprob_tolerance``."""
        samples = self.sample(
            [prompt_ids], n=1, max_new_tokens=PROBE_TOKENS, temperature=temperature, top_p=1.0, stop=(),
            seed=0, policy=policy,
        )  # fmt: skip
        mask = samples.completion_mask.bool()

        def gap(at: float) -> float:
            with torch.no_grad():
                ours = policy.token_logprobs(
                    samples.input_ids, samples.attention_mask, samples.completion_mask, temperature=at
                )
            return (ours - samples.logprobs)[mask].abs().mean().item()

        at_temperature = gap(temperature)
        if at_temperature <= self.logprob_tolerance:
            return at_temperature
        if temperature != 1.0 and gap(1.0) < at_temperature:
            raise RolloutServerError(
                "the rollout server's log-probs are before temperature (vLLM's default logprobs mode); start "
                "vLLM with --logprobs-mode processed_logprobs"
            )
        raise RolloutServerError(
            f"the rollout server's log-probs differ from the policy's by {at_temperature:.3f} per token (more "
            f"than {self.logprob_tolerance}): it does not serve the policy's base model with the synced adapter"
        )

    # ------------------------------------------------------------------------------ weights
    def sync(self, policy: LMPolicy, version: int) -> Path:
        """Write the policy's adapter as ``v<version>`` (atomically) and load it on the server under
        ``adapter``; returns the folder written. Older versions but the previous one are removed."""
        if not policy.is_lora:
            raise ConfigError(
                "a rollout server receives the policy as a LoRA adapter; train with PolicyConfig(lora_rank=...) "
                "(syncing full weights is not supported)"
            )
        root = self.folder / self.adapter
        root.mkdir(parents=True, exist_ok=True)
        name = f"v{version:06d}"
        staging = root / f".{name}.tmp-{uuid.uuid4().hex[:8]}"
        try:
            policy.model.save_pretrained(staging)
            replace_folder(staging, root / name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        path = str(self.server_folder / self.adapter / name)
        answer = self._post(
            "load_lora_adapter", {"lora_name": self.adapter, "lora_path": path, "load_inplace": True}
        )
        if answer.status_code == 404 and error_message(answer) == "Not Found":
            raise RolloutServerError(
                f"{self.base_url} has no /load_lora_adapter route: start vLLM with "
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora"
            )
        if answer.status_code != 200:
            raise RolloutServerError(
                f"the rollout server did not load the adapter from {path} ({answer.status_code}: "
                f"{error_message(answer)}); it must be able to read that folder: set "
                "GRPOConfig.rollout_server_folder to where it sees GRPOConfig.rollout_folder"
            )
        self.version = version
        for old in sorted(p for p in root.iterdir() if p.name.startswith("v"))[:-KEEP_VERSIONS]:
            shutil.rmtree(old, ignore_errors=True)
        return root / name

    # ------------------------------------------------------------------------------ sampling
    def sample(
        self,
        prompt_ids: Sequence[Sequence[int]],
        *,
        n: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop: Sequence[str],
        seed: int,
        policy: LMPolicy,
    ) -> Samples:
        """``n`` completions of each prompt drawn by the server with the synced adapter, as the
        ``Samples`` ``llm.sampling.sample_ids`` returns (the server's ids and log-probs; tensors on the
        policy's device; ``prefill_tokens``: the prompts' tokens, each once). A server that no longer
        knows the adapter (restarted) gets the synced weights again, once, and the step goes on."""
        try:
            return self._sample(prompt_ids, n, max_new_tokens, temperature, top_p, stop, seed, policy)
        except AdapterMissingError:
            if self.version is None:
                raise
            self.sync(policy, self.version)  # the policy has not changed since: the same weights
            return self._sample(prompt_ids, n, max_new_tokens, temperature, top_p, stop, seed, policy)

    def _sample(
        self,
        prompt_ids: Sequence[Sequence[int]],
        n: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop: Sequence[str],
        seed: int,
        policy: LMPolicy,
    ) -> Samples:
        eos = eos_token_ids(policy.base_model, policy.tokenizer)

        def one(k: int) -> list[SampledRow]:
            body: dict[str, Any] = {
                "model": self.adapter, "prompt": list(prompt_ids[k]), "n": n, "max_tokens": max_new_tokens,
                "temperature": temperature, "top_p": top_p, "seed": (seed * PROMPT_SEED_MIX + k) % 2**62,
                "logprobs": 0, "return_token_ids": True,
            }  # fmt: skip
            if stop:
                body["stop"] = list(stop)
            answer = self._post("completions", body)
            self._first_choice(answer, self.adapter)
            return [self._row(k, prompt_ids[k], choice, eos) for choice in self._choices(answer, n)]

        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompt_ids))) as pool:
            rows = [row for part in pool.map(one, range(len(prompt_ids))) for row in part]
        prefill = sum(len(p) for p in prompt_ids)
        return samples_from_rows(rows, int(policy.tokenizer.pad_token_id), policy.device, prefill)

    @staticmethod
    def _choices(answer: httpx.Response, n: int) -> list[dict[str, Any]]:
        choices = sorted(answer.json()["choices"], key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise RolloutServerError(f"the rollout server returned {len(choices)} completions, not n={n}")
        return choices

    def _row(self, k: int, prompt: Sequence[int], choice: dict[str, Any], eos: set[int]) -> SampledRow:
        """One choice of the server's answer, checked: token ids present, the prompt as sent, one
        finite log-prob per token."""
        tokens = choice.get("token_ids")
        if not isinstance(tokens, list) or not tokens:
            raise RolloutServerError(
                f"the rollout server returned no token ids (return_token_ids) for prompt {k}; it is not "
                f"vLLM-compatible (this client follows vLLM {VLLM_PROTOCOL}; resonance serve works too)"
            )
        sent = choice.get("prompt_token_ids")
        if sent is not None and list(sent) != list(prompt):
            raise RolloutServerError(
                f"the rollout server sampled prompt {k} from other token ids than sent; it must take "
                "token-id prompts as they are"
            )
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        if (
            not isinstance(logprobs, list)
            or len(logprobs) != len(tokens)
            or any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in logprobs)
        ):
            raise RolloutServerError(
                f"the rollout server returned no log-prob for every sampled token of prompt {k} (asked "
                "with logprobs: 0); it is not vLLM-compatible"
            )
        reason = choice.get("finish_reason") or "length"
        if reason == "stop" and tokens[-1] in eos:
            reason = "eos"
        return SampledRow(
            k, list(prompt), tokens, [float(v) for v in logprobs], choice.get("text", ""), reason
        )
