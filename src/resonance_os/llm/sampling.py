"""Batched sampling from an ``LMPolicy`` with the per-token log-probabilities RL needs.

For each prompt ``x`` we draw ``n`` completions ``y ~ pi_theta(. | x)``. At step ``t`` the next token is
drawn from

    p_T(v) = softmax(z_t / T)_v,    restricted to the top-p nucleus when top_p < 1 (Holtzman et al.,
                                    2020, "The Curious Case of Neural Text Degeneration")

and we record ``log p_T(y_t)`` (after temperature, before the top-p cut: the same number
``LMPolicy.token_logprobs(..., temperature=T)`` recomputes teacher-forced, which is what the
importance ratios of the GRPO family compare against; with ``top_p=1`` it is exactly the sampling
distribution). ``temperature=0`` is greedy decoding, with the log-probabilities of ``T = 1``.

The samples come from the generation engine (``llm.engine.GenerationEngine``, the one that serves the
OpenAI API), run in the caller's thread on the policy's own model (``borrowed``: nothing of the model
is changed or copied): each prompt is computed once and its keys/values copied to its ``n`` samples
(a GRPO group pays for its prompt once; ``Samples.prefill_tokens`` counts the prompt tokens computed),
prompts that share a start (a chat template's system prompt) share it, and a finished sample leaves the
batch. Each prompt's samples draw from their own ``torch.Generator`` seeded from ``(seed, prompt,
sample)``, so sampling never touches the global RNG and the same seed gives the same completions.
With LoRA the engine runs inside ``LMPolicy.fast_forward(merged=True)``: each adapted layer computes
with ``W + s B A`` folded into one temporary weight (the model's weights are never written), one matrix
product instead of peft's three; the log-probs differ from the unmerged forward by float rounding
(~1e-6, the size of the KV-cache vs teacher-forced difference; tests/llm/test_fast_forward.py).
``dtype=torch.bfloat16`` runs it on a bf16 copy of the policy instead (``LMPolicy.rollout_precision``;
faster only where the CPU has AMX, see ``llm.precision``): the tokens and log-probs are then the
copy's, which a trainer must correct for (``GRPOConfig.rollout_dtype``). The model is put in eval mode
only when dropout could act (``LMPolicy.set_mode``). A completion ends at an EOS token (kept, and
masked in, like TRL) or once its text contains a stop string (the token that completed it is kept in
the ids and the mask; the text is cut before the stop string), or after ``max_new_tokens``. Finished
rows are padded with the pad token and masked out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from resonance_os.llm.engine import EngineConfig, GenerationEngine
from resonance_os.llm.errors import ConfigError, PromptTooLongError
from resonance_os.llm.policy import LMPolicy
from resonance_os.llm.sampling_params import Completion, SamplingParams

PROMPT_SEED_MIX = 1_000_003
"""Prompt k of a call samples with seed ``seed * PROMPT_SEED_MIX + k`` (its samples then by index)."""


@dataclass
class Samples:
    """A batch of ``len(prompts) * n`` completions, rows grouped by prompt (prompt i: rows i*n .. i*n+n-1).

    prompt_ids, prompt_mask: (N, P) left-padded prompts. completion_ids, completion_mask: (N, C)
    right-padded completions (1 on generated tokens, EOS included). logprobs: (N, C) float32
    ``log p_T`` of each completion token, 0 where masked. texts: the completions' text (special
    tokens skipped, cut before a stop string). finish_reasons: "eos", "stop" or "length" per row.
    prompt_index: the prompt each row belongs to. prefill_tokens: prompt tokens computed to draw them
    (each prompt once for its ``n`` samples, less what it shared with another prompt).
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor
    texts: list[str]
    finish_reasons: list[str]
    prompt_index: list[int] = field(default_factory=list)
    prefill_tokens: int = 0

    @property
    def input_ids(self) -> torch.Tensor:
        """(N, P + C) prompt and completion, the input of ``LMPolicy.token_logprobs``."""
        return torch.cat([self.prompt_ids, self.completion_ids], dim=1)

    @property
    def attention_mask(self) -> torch.Tensor:
        return torch.cat([self.prompt_mask, self.completion_mask], dim=1)

    @property
    def completion_lengths(self) -> torch.Tensor:
        return self.completion_mask.sum(-1)


def concat_samples(parts: Sequence[Samples], pad_id: int) -> Samples:
    """One batch of several ``Samples`` (e.g. DAPO's extra sampling rounds), rows in order: prompts
    left-padded and completions right-padded to the widest part with ``pad_id`` (mask 0, log-prob 0);
    ``prompt_index`` of part k is offset by the prompts of the parts before it."""
    if not parts:
        raise ConfigError("concat_samples needs at least one batch")
    prompt_width = max(p.prompt_ids.shape[1] for p in parts)
    completion_width = max(p.completion_ids.shape[1] for p in parts)

    def widen(x: torch.Tensor, width: int, value: float, left: bool) -> torch.Tensor:
        extra = width - x.shape[1]
        return torch.nn.functional.pad(x, (extra, 0) if left else (0, extra), value=value)

    offsets, total = [], 0
    for p in parts:
        offsets.append(total)
        total += max(p.prompt_index, default=-1) + 1
    return Samples(
        prompt_ids=torch.cat([widen(p.prompt_ids, prompt_width, pad_id, True) for p in parts]),
        prompt_mask=torch.cat([widen(p.prompt_mask, prompt_width, 0, True) for p in parts]),
        completion_ids=torch.cat([widen(p.completion_ids, completion_width, pad_id, False) for p in parts]),
        completion_mask=torch.cat([widen(p.completion_mask, completion_width, 0, False) for p in parts]),
        logprobs=torch.cat([widen(p.logprobs, completion_width, 0.0, False) for p in parts]),
        texts=[t for p in parts for t in p.texts],
        finish_reasons=[r for p in parts for r in p.finish_reasons],
        prompt_index=[i + k for p, k in zip(parts, offsets) for i in p.prompt_index],
        prefill_tokens=sum(p.prefill_tokens for p in parts),
    )


def sample(
    policy: LMPolicy,
    prompts: Sequence[Any],
    *,
    n: int = 1,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_p: float = 1.0,
    stop: Sequence[str] | str | None = None,
    seed: int = 0,
    chat_template: bool = True,
    dtype: torch.dtype | None = None,
) -> Samples:
    """Draw ``n`` completions for each prompt (a string or a list of chat messages) in one batch.

    Same seed, same completions (on one machine and device). Raises ``PromptTooLongError`` when a
    prompt plus ``max_new_tokens`` exceeds the model's context, ``ConfigError`` for bad options.
    ``dtype``: sample from a copy of the policy in this dtype (e.g. ``torch.bfloat16``); None = the
    policy itself.
    """
    if isinstance(prompts, str):
        prompts = [prompts]
    if not prompts:
        raise ConfigError("prompts is empty; pass at least one prompt")
    ids = policy.encode_prompts(prompts, chat_template=chat_template)
    return sample_ids(
        policy, ids, n=n, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
        stop=stop, seed=seed, dtype=dtype,
    )  # fmt: skip


def _validate(n: int, max_new_tokens: int, temperature: float, top_p: float, seed: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n={n!r} completions per prompt must be an integer >= 1")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens={max_new_tokens!r} must be an integer >= 1")
    if not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
        raise ConfigError(f"temperature={temperature!r} must be a number in [0, 2] (0 = greedy)")
    if not isinstance(top_p, (int, float)) or not 0.0 < top_p <= 1.0:
        raise ConfigError(f"top_p={top_p!r} must be in (0, 1] (1 = no nucleus cut)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed={seed!r} must be an integer")


def sample_ids(
    policy: LMPolicy,
    prompt_ids: Sequence[Sequence[int]],
    *,
    n: int = 1,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_p: float = 1.0,
    stop: Sequence[str] | str | None = None,
    seed: int = 0,
    dtype: torch.dtype | None = None,
) -> Samples:
    """:func:`sample` on already tokenized prompts (lists of token ids)."""
    _validate(n, max_new_tokens, temperature, top_p, seed)
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if any(not isinstance(s, str) or not s for s in stops):
        raise ConfigError(f"stop={stop!r} must be non-empty strings")
    if not prompt_ids or any(len(p) == 0 for p in prompt_ids):
        raise ConfigError("every prompt needs at least one token; got an empty prompt")
    context = policy.context_length
    longest = max(len(p) for p in prompt_ids)
    if context is not None and longest + max_new_tokens > context:
        worst = max(range(len(prompt_ids)), key=lambda i: len(prompt_ids[i]))
        raise PromptTooLongError(
            f"prompt {worst} has {longest} tokens and max_new_tokens={max_new_tokens}: {longest + max_new_tokens} "
            f"> the model's context of {context} tokens; shorten the prompt or lower max_new_tokens"
        )
    was_training = policy.set_mode(False)
    try:
        # LoRA folded into the weights while sampling, in the policy or in its copy in ``dtype``
        with policy.rollout_precision(dtype), policy.fast_forward(merged=True):
            engine = GenerationEngine(
                policy.forward_model, policy.tokenizer, EngineConfig(max_batch=len(prompt_ids) * n), borrowed=True
            )  # fmt: skip
            handles = [
                engine.submit(
                    ids,
                    SamplingParams(
                        max_tokens=max_new_tokens,
                        temperature=temperature,
                        top_p=top_p,
                        n=n,
                        stop=tuple(stops),
                        seed=(seed * PROMPT_SEED_MIX + k) % 2**62,
                        logprobs=True,
                    ),
                )  # fmt: skip
                for k, ids in enumerate(prompt_ids)
            ]
            engine.run_pending()
    finally:
        policy.set_mode(was_training)
    completions = [h.result() for h in handles]
    return _to_samples(completions, engine, int(policy.tokenizer.pad_token_id), policy.device)


def _to_samples(
    completions: list[Completion], engine: GenerationEngine, pad: int, device: torch.device
) -> Samples:
    """The engine's completions as a padded batch, rows grouped by prompt."""
    rows = []
    for k, completion in enumerate(completions):
        for choice in completion.choices:
            tokens = choice.token_ids
            ended_on_eos = choice.finish_reason == "stop" and tokens[-1] in engine.eos_ids
            reason = "eos" if ended_on_eos else choice.finish_reason or "length"
            logprobs = [t.logprob for t in choice.logprobs]
            rows.append(SampledRow(k, completion.prompt_token_ids, tokens, logprobs, choice.text, reason))
    return samples_from_rows(rows, pad, device, sum(c.prefill_tokens for c in completions))


@dataclass
class SampledRow:
    """One completion as a sampler returns it: its prompt's index and ids, the completion's ids and
    their log-probs, its text and why it ended ("eos", "stop" or "length")."""

    prompt_index: int
    prompt_ids: Sequence[int]
    token_ids: Sequence[int]
    logprobs: Sequence[float]
    text: str
    finish_reason: str


def samples_from_rows(
    rows: Sequence[SampledRow], pad: int, device: torch.device | str, prefill_tokens: int
) -> Samples:
    """Completions (rows grouped by prompt) as one padded ``Samples`` batch on ``device``: prompts
    left-padded, completions right-padded with ``pad`` (mask 0, log-prob 0)."""
    width = max(len(r.prompt_ids) for r in rows)
    length = max(len(r.token_ids) for r in rows)
    prompt_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    prompt_mask = torch.zeros((len(rows), width), dtype=torch.long)
    completion_ids = torch.full((len(rows), length), pad, dtype=torch.long)
    completion_mask = torch.zeros((len(rows), length), dtype=torch.long)
    logprobs = torch.zeros((len(rows), length), dtype=torch.float32)
    for r, row in enumerate(rows):
        prompt, tokens = row.prompt_ids, row.token_ids
        prompt_ids[r, width - len(prompt) :] = torch.tensor(prompt)
        prompt_mask[r, width - len(prompt) :] = 1
        completion_ids[r, : len(tokens)] = torch.tensor(tokens)
        completion_mask[r, : len(tokens)] = 1
        logprobs[r, : len(tokens)] = torch.tensor(row.logprobs, dtype=torch.float32)
    return Samples(
        prompt_ids=prompt_ids.to(device),
        prompt_mask=prompt_mask.to(device),
        completion_ids=completion_ids.to(device),
        completion_mask=completion_mask.to(device),
        logprobs=logprobs.to(device),
        texts=[r.text for r in rows],
        finish_reasons=[r.finish_reason for r in rows],
        prompt_index=[r.prompt_index for r in rows],
        prefill_tokens=prefill_tokens,
    )
