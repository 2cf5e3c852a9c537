"""What both ends of a vLLM-compatible OpenAI API agree on: the vLLM release whose protocol is followed
and how an error answer's message is read. Light (httpx only): the API layer imports it at start-up."""

from __future__ import annotations

import httpx

VLLM_PROTOCOL = "0.34.0"
"""The vLLM release whose OpenAI-API routes and fields our client and our server's vLLM routes follow."""


def error_message(response: httpx.Response) -> str:
    """The message of an error answer: OpenAI's and vLLM's ``{"error": {"message"}}``, FastAPI's
    ``{"detail"}``, or the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("detail"):
            return str(body["detail"])
    return str(body)[:300]
