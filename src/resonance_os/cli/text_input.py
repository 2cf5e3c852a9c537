"""The texts commands read: a file, standard input (``-``) or, for ``compare``, the words themselves.

Every text is held to the service's limit (:data:`resonance_os.core.limits.MAX_TEXT_CHARS`), so a
command refuses a 20 MB file at once instead of working on it for minutes.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from resonance_os.core.errors import ValidationError
from resonance_os.core.limits import MAX_TEXT_CHARS

MAX_UTF8_BYTES_PER_CHAR = 4
_FILE_SUFFIX = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}")
"""A file-name suffix: ``.txt``, ``.md``, ``.docx`` (not ``.5`` or ``...``)."""


def _too_long(where: str, size: str) -> ValidationError:
    return ValidationError(
        f"{where} is {size}; the limit is {MAX_TEXT_CHARS:,} characters (about 8,000 words, the "
        "service's limit too): measure it in parts, e.g. a chapter or section at a time"
    )


def _decode(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{where} is not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); "
            "convert it first, e.g. iconv -t UTF-8"
        ) from None
    if len(text) > MAX_TEXT_CHARS:
        raise _too_long(where, f"{len(text):,} characters")
    return text


def read_source(source: str) -> str:
    """Text of the file ``source``, or of standard input when ``source`` is ``-``, at most
    ``MAX_TEXT_CHARS`` characters."""
    limit_bytes = MAX_TEXT_CHARS * MAX_UTF8_BYTES_PER_CHAR
    if source == "-":
        data = typer.get_binary_stream("stdin").read(limit_bytes + 1)
        if len(data) > limit_bytes:
            raise _too_long("standard input", f"over {limit_bytes:,} bytes")
        return _decode(data, "standard input")
    path = Path(source)
    if not path.is_file():
        raise ValidationError(f"no such file: {source!r}; give a text file, or - to read standard input")
    try:
        size = path.stat().st_size
        if size > limit_bytes:
            raise _too_long(repr(source), f"{size:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read {source!r}: {exc.strerror}") from None
    return _decode(data, repr(source))


def looks_like_path(value: str) -> bool:
    """Whether ``value`` reads as a file name rather than text: one word with a path separator or a
    suffix such as ``.txt`` or ``.md``."""
    if not value or any(ch.isspace() for ch in value):
        return False
    return "/" in value or "\\" in value or bool(_FILE_SUFFIX.fullmatch(Path(value).suffix))


def text_or_file(value: str, literal: bool = False) -> tuple[str, str]:
    """(text, label): standard input for ``-``, the file's text when ``value`` names an existing file,
    else ``value`` itself; a missing file whose name looks like a path is an error, unless ``literal``
    (then ``value`` is always the text)."""
    label = "text " + repr(value if len(value) <= 30 else value[:27] + "...")
    if literal:
        if len(value) > MAX_TEXT_CHARS:
            raise _too_long(label, f"{len(value):,} characters")
        return value, label
    if value == "-":
        return read_source(value), "standard input"
    path = Path(value)
    if len(value) < 4096 and path.is_file():
        return read_source(value), path.name
    if looks_like_path(value):
        raise ValidationError(
            f"no such file: {value!r}; check the name, or pass --literal to compare the words themselves"
        )
    if len(value) > MAX_TEXT_CHARS:
        raise _too_long(label, f"{len(value):,} characters")
    return value, label
