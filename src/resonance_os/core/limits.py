"""The size limits a user meets, stated once for the command line, the service and the writer."""

from __future__ import annotations

MAX_TEXT_CHARS = 50_000
"""Longest text measured, scored, refined or learned from, in characters (about 8,000 words): the
service's request limit and the command line's; longer texts are refused, not truncated."""

MAX_PARAGRAPHS = 12
"""Most paragraphs one article may have: each takes seconds (minutes on a busy CPU with a language
model), and the service must answer within its time budget."""
