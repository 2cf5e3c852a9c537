"""Bodies of the OpenAI routes (pydantic). Field names, types and ranges are OpenAI's; vLLM's extensions
``top_k``, ``stop_token_ids``, ``ignore_eos`` and ``return_token_ids`` are accepted too. Unknown fields
are ignored (as OpenAI-compatible servers do); fields that would change the answer in ways not served
here (tools, response formats, logit bias, echo, best_of, suffix) are refused by name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

Int = Annotated[int, Strict()]
Float = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]

MAX_STOP = 4
UNSERVED = {
    "tools": "tool calls",
    "tool_choice": "tool calls",
    "functions": "function calls",
    "function_call": "function calls",
    "response_format": "response formats (JSON mode)",
    "logit_bias": "logit bias",
    "echo": "echo",
    "suffix": "suffixes",
    "audio": "audio",
    "prediction": "predicted outputs",
}
"""Fields whose non-empty value asks for something this server does not do: a 400 naming the field."""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: Bool = False


class Sampling(BaseModel):
    """The sampling fields both completion routes share."""

    model_config = ConfigDict(extra="allow")

    model: Text = Field(min_length=1)
    max_tokens: Int | None = Field(default=None, ge=1)
    temperature: Float | None = Field(default=None, ge=0, le=2)
    top_p: Float | None = Field(default=None, gt=0, le=1)
    n: Int = Field(default=1, ge=1)
    stop: Text | list[Text] | None = None
    seed: Int | None = None
    presence_penalty: Float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: Float | None = Field(default=None, ge=-2, le=2)
    stream: Bool = False
    stream_options: StreamOptions | None = None
    user: Text | None = None
    best_of: Int | None = None
    top_k: Int | None = Field(default=None, ge=-1)
    stop_token_ids: list[Annotated[int, Strict(), Field(ge=0)]] | None = None
    ignore_eos: Bool = False
    return_token_ids: Bool = False

    def unserved(self) -> str | None:
        """The first field set that this server does not serve, or None."""
        extra = self.model_extra or {}
        for name, what in UNSERVED.items():
            if extra.get(name) not in (None, False, [], {}, ""):
                return f"{name}: {what} are not served by this server; remove `{name}`"
        if self.best_of not in (None, 1):
            return "best_of: only best_of=1 is served; ask for n completions and pick yourself"
        if isinstance(self.stop, list) and len(self.stop) > MAX_STOP:
            return f"stop: at most {MAX_STOP} stop sequences, got {len(self.stop)}"
        return None


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text"]
    text: Text


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Text | list[TextPart] | None = None
    name: Text | None = None

    def as_template_message(self) -> dict[str, Any]:
        """``{"role", "content"}`` for the chat template: text parts joined, developer as system."""
        content = (
            self.content if isinstance(self.content, str) else "".join(p.text for p in self.content or [])
        )
        return {"role": "system" if self.role == "developer" else self.role, "content": content}


class ChatCompletionRequest(Sampling):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: Int | None = Field(default=None, ge=1)
    logprobs: Bool = False
    top_logprobs: Int | None = Field(default=None, ge=0, le=20)


class CompletionRequest(Sampling):
    prompt: Text | list[Text] | list[Annotated[int, Strict()]] | list[list[Annotated[int, Strict()]]]
    logprobs: Int | None = Field(default=None, ge=0, le=20)


class AdapterRegistration(BaseModel):
    """``name``: the model id the tenant will call it by; ``path``: the run folder, relative to the
    tenant's runs folder (``$RESONANCE_OPENAI_RUNS/<tenant>/``); ``replace``: serve ``path`` under a
    name already registered (its version goes up by one; requests after the swap get the new weights)."""

    model_config = ConfigDict(extra="forbid")
    name: Text = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    path: Text = Field(min_length=1, max_length=1024)
    replace: bool = False
