"""Text of a completion as its tokens arrive: incremental decoding and stop strings.

``TextStream.push(token_id)`` returns the text that may be shown now. Decoding is incremental (the
offsets scheme of Hugging Face's text-generation-inference): the last few tokens are decoded with
and without the new one and the difference is the new text, so each token costs O(1) and a token
that ends in the middle of a multi-byte character waits until the character is complete. Stop
strings: text that could be the start of a stop string is held back until it is known not to be;
once a stop string appears the stream ends and the text is cut before it (the OpenAI convention).
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


class TextStream:
    """The visible text of one completion. ``stopped`` turns true once a stop string was found."""

    def __init__(self, tokenizer: Any, stop: tuple[str, ...] = ()) -> None:
        self.tokenizer, self.stop = tokenizer, stop
        self.tokens: list[int] = []
        self.prefix_offset = self.read_offset = 0
        self.text = ""  # decoded so far (before any stop cut)
        self.shown = 0  # characters of text already returned
        self.stopped = False

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def push(self, token: int) -> str:
        """Add one token; the newly visible text ("" while it is held back)."""
        if self.stopped:
            return ""
        self.tokens.append(token)
        before = self._decode(self.tokens[self.prefix_offset : self.read_offset])
        after = self._decode(self.tokens[self.prefix_offset :])
        if len(after) > len(before) and not after.endswith(REPLACEMENT):
            self.text += after[len(before) :]
            self.prefix_offset, self.read_offset = self.read_offset, len(self.tokens)
        return self._visible(final=False)

    def finish(self) -> str:
        """The text held back so far (the completion ended without a stop string)."""
        return self._visible(final=True)

    def _visible(self, final: bool) -> str:
        end = len(self.text)
        if self.stop:
            longest = max(len(s) for s in self.stop)
            window_start = max(0, self.shown - longest + 1)
            hits = [i for i in (self.text.find(s, window_start) for s in self.stop) if i >= 0]
            if hits:
                end = min(hits)
                self.stopped = True
            elif not final:
                end -= self._held_back()
        end = max(end, self.shown)
        new, self.shown = self.text[self.shown : end], end
        return new

    def _held_back(self) -> int:
        """Characters at the end of the text that begin some stop string."""
        text = self.text
        for size in range(min(len(text), max(len(s) for s in self.stop) - 1), 0, -1):
            tail = text[-size:]
            if any(s.startswith(tail) for s in self.stop):
                return size
        return 0
