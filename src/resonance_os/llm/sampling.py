"""Batched sampling from an ``LMPolicy`` with the per-token log-probabilities RL needs.

For each prompt ``x`` we draw ``n`` completions ``y ~ pi_theta(. | x)`` in one batch: prompts are
tokenized (chat template by default), repeated ``n`` times, left-padded to one width, and decoded
token by token with a KV cache. At step ``t`` the next token is drawn from

    p_T(v) = softmax(z_t / T)_v,    restricted to the top-p nucleus when top_p < 1 (Holtzman et al.,
                                    2020, "The Curious Case of Neural Text Degeneration")

and we record ``log p_T(y_t)`` (after temperature, before the top-p cut: the same number
``LMPolicy.token_logprobs(..., temperature=T)`` recomputes teacher-forced, which is what the
importance ratios of the GRPO family compare against; with ``top_p=1`` it is exactly the sampling
distribution). ``temperature=0`` is greedy decoding, with the log-probabilities of ``T = 1``.

Our own loop, not ``model.generate``: on the tiny test model the two run within 5% of each other
(docs/llm_policy.md has the figures); ours calls the transformers model directly (no peft wrapper per
step), takes the log-probs from the same log-softmax that sampled, and seeds a private
``torch.Generator``, so sampling never touches the global RNG. With LoRA the loop runs inside
``LMPolicy.fast_forward(merged=True)``: each adapted layer computes with ``W + s B A`` folded into one
temporary weight (the model's weights are never written), one matrix product instead of peft's three
and its per-call checks; the log-probs differ from the unmerged forward by float rounding (~1e-6, the
size of the KV-cache vs teacher-forced difference; tests/llm/test_fast_forward.py). ``dtype=torch.bfloat16``
runs the loop on a bf16 copy of the policy instead (``LMPolicy.rollout_precision``; 1.7x faster a
token on SmolLM2 with this CPU's AMX, docs/llm_rl.md): the tokens and log-probs are then the copy's,
which a trainer must correct for (``GRPOConfig.rollout_dtype``). The model is put
in eval mode only when dropout could act (``LMPolicy.set_mode``). A completion ends at
an EOS token (kept, and masked in, like TRL) or once its text contains a stop string (the token
that completed it is kept in the ids and the mask; the text is cut before the stop string), or after
``max_new_tokens``. Finished rows are padded with the pad token and masked out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from resonance_os.llm.errors import ConfigError, PromptTooLongError
from resonance_os.llm.policy import LMPolicy


@dataclass
class Samples:
    """A batch of ``len(prompts) * n`` completions, rows grouped by prompt (prompt i: rows i*n .. i*n+n-1).

    prompt_ids, prompt_mask: (N, P) left-padded prompts. completion_ids, completion_mask: (N, C)
    right-padded completions (1 on generated tokens, EOS included). logprobs: (N, C) float32
    ``log p_T`` of each completion token, 0 where masked. texts: the completions' text (special
    tokens skipped, cut before a stop string). finish_reasons: "eos", "stop" or "length" per row.
    prompt_index: the prompt each row belongs to.
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    logprobs: torch.Tensor
    texts: list[str]
    finish_reasons: list[str]
    prompt_index: list[int] = field(default_factory=list)

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
    if not isinstance(temperature, (int, float)) or not temperature >= 0 or temperature == float("inf"):
        raise ConfigError(f"temperature={temperature!r} must be a finite number >= 0 (0 = greedy)")
    if not isinstance(top_p, (int, float)) or not 0.0 < top_p <= 1.0:
        raise ConfigError(f"top_p={top_p!r} must be in (0, 1] (1 = no nucleus cut)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed={seed!r} must be an integer")


def _eos_ids(policy: LMPolicy) -> set[int]:
    eos: set[int] = set()
    if policy.tokenizer.eos_token_id is not None:
        eos.add(int(policy.tokenizer.eos_token_id))
    gen_cfg = getattr(policy.base_model, "generation_config", None)
    extra = getattr(gen_cfg, "eos_token_id", None)
    if isinstance(extra, int):
        eos.add(extra)
    elif isinstance(extra, (list, tuple)):
        eos.update(int(e) for e in extra)
    return eos


def _top_p_filter(scaled: torch.Tensor, top_p: float) -> torch.Tensor:
    """Logits outside the smallest set whose probability reaches ``top_p`` set to -inf (top token always kept)."""
    sorted_logits, order = scaled.sort(dim=-1, descending=True)
    cumulative = sorted_logits.softmax(-1).cumsum(-1)
    remove = cumulative - sorted_logits.softmax(-1) >= top_p  # mass before this token already reaches top_p
    sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
    return torch.full_like(scaled, float("-inf")).scatter(-1, order, sorted_logits)


@torch.inference_mode()
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
    from transformers import DynamicCache

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

    device = policy.device
    pad = int(policy.tokenizer.pad_token_id)
    rows = [list(p) for p in prompt_ids for _ in range(n)]
    prompt_index = [i for i in range(len(prompt_ids)) for _ in range(n)]
    batch, width = len(rows), longest
    ids = torch.full((batch, width), pad, dtype=torch.long)
    mask = torch.zeros((batch, width), dtype=torch.long)
    for r, p in enumerate(rows):
        ids[r, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[r, width - len(p) :] = 1
    ids, mask = ids.to(device), mask.to(device)

    eos = torch.tensor(sorted(_eos_ids(policy)), dtype=torch.long, device=device)
    generator = torch.Generator(device=device).manual_seed(seed)
    max_stop = max((len(s) for s in stops), default=0)

    was_training = policy.set_mode(False)
    tokens: list[torch.Tensor] = []
    logps: list[torch.Tensor] = []
    alive_steps: list[torch.Tensor] = []
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    reasons = ["length"] * batch
    generated: list[list[int]] = [[] for _ in range(batch)]
    try:
        # LoRA folded into the weights while sampling, in the policy or in its copy in ``dtype``
        with policy.rollout_precision(dtype), policy.fast_forward(merged=True):
            cache = DynamicCache()  # a StaticCache measured slower on the CPU without compilation
            out = policy.forward_logits(ids, mask, logits_to_keep=1, past_key_values=cache)
            next_pos = mask.sum(-1, keepdim=True)
            attn = torch.cat(
                [mask, torch.ones((batch, max_new_tokens), dtype=mask.dtype, device=device)], dim=1
            )
            for step in range(max_new_tokens):
                logits = out.logits[:, -1].float()
                if temperature > 0:
                    scaled = logits / temperature
                    logp_all = scaled.log_softmax(-1)
                    probs = (_top_p_filter(scaled, top_p) if top_p < 1.0 else scaled).softmax(-1)
                    token = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
                else:
                    logp_all = logits.log_softmax(-1)
                    token = logits.argmax(-1)
                alive = ~finished
                token = torch.where(alive, token, torch.full_like(token, pad))
                tokens.append(token)
                logps.append(torch.where(alive, logp_all.gather(-1, token[:, None]).squeeze(-1), 0.0))
                alive_steps.append(alive)
                hit_eos = alive & torch.isin(token, eos)
                for r in hit_eos.nonzero().flatten().tolist():
                    reasons[r] = "eos"
                finished |= hit_eos
                if stops:
                    token_list = token.tolist()
                    for r in alive.nonzero().flatten().tolist():
                        generated[r].append(token_list[r])
                        if finished[r]:
                            continue
                        tail = policy.tokenizer.decode(
                            generated[r][-(max_stop + 2) :], skip_special_tokens=True
                        )
                        if any(s in tail for s in stops):
                            finished[r] = True
                            reasons[r] = "stop"
                if step == max_new_tokens - 1 or bool(finished.all()):
                    break
                out = policy.forward_logits(
                    token[:, None], attn[:, : width + step + 1], logits_to_keep=1, past_key_values=cache,
                    position_ids=next_pos,
                )  # fmt: skip
                next_pos = next_pos + 1
    finally:
        policy.set_mode(was_training)

    completion_ids = torch.stack(tokens, dim=1)
    completion_mask = torch.stack(alive_steps, dim=1).long()
    logprobs = torch.stack(logps, dim=1).float()
    texts = []
    for r in range(batch):
        length = int(completion_mask[r].sum())
        text = policy.tokenizer.decode(completion_ids[r, :length].tolist(), skip_special_tokens=True)
        if stops:
            cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
            if cut >= 0:
                text = text[:cut]
        texts.append(text)
    return Samples(
        prompt_ids=ids,
        prompt_mask=mask,
        completion_ids=completion_ids,
        completion_mask=completion_mask,
        logprobs=logprobs,
        texts=texts,
        finish_reasons=reasons,
        prompt_index=prompt_index,
    )
