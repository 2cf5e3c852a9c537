"""API keys: generation and the keyed hash that is all the database ever stores.

Why HMAC-SHA256 with a server-side pepper rather than argon2/bcrypt: our keys are 256 random bits, not
passwords a person chose, so a slow hash adds nothing against guessing (2^256 tries either way) while
costing tens of milliseconds on *every* request. A keyed hash is deterministic, so the key's row is
found by an indexed equality lookup, and a stolen database (a dump, a backup, an injection) is useless
without the pepper, which lives outside the database: ``$RESONANCE_KEY_PEPPER`` (any string), else the
file ``$RESONANCE_KEY_PEPPER_FILE``, else ``<RESONANCE_HOME>/key_pepper`` (32 random bytes, mode 0600,
created on first use). Every server and CLI that shares a database must share the pepper.

Keys are never logged: only the 12-character display prefix (``rsk_`` + 8 characters) is ever shown.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import lru_cache
from pathlib import Path

from resonance_os.core.errors import StorageError
from resonance_os.core.home import resonance_home

KEY_PREFIX = "rsk_"
DISPLAY_PREFIX_LEN = 12


def _pepper_file() -> Path:
    explicit = os.environ.get("RESONANCE_KEY_PEPPER_FILE")
    return Path(explicit).expanduser() if explicit else resonance_home() / "key_pepper"


@lru_cache(maxsize=8)
def _load_pepper(env_value: str | None, file: Path) -> bytes:
    if env_value:
        return env_value.encode()
    try:
        return file.read_bytes()
    except FileNotFoundError:
        pass
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first
        return file.read_bytes()
    except OSError as exc:
        raise StorageError(f"cannot create the API-key pepper file {file}: {exc}") from None
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(32))
    return file.read_bytes()


def pepper() -> bytes:
    """The server-side secret mixed into every key hash."""
    return _load_pepper(os.environ.get("RESONANCE_KEY_PEPPER"), _pepper_file())


def new_key() -> str:
    """A fresh API key: ``rsk_`` followed by 43 URL-safe characters (256 random bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """HMAC-SHA256 of ``key`` under the pepper, as 64 hex digits."""
    return hmac.new(pepper(), key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def display_prefix(key: str) -> str:
    """The part of a key that may be shown in listings and logs."""
    return key[:DISPLAY_PREFIX_LEN]


def looks_like_key(value: str) -> bool:
    """Whether ``value`` has the shape of one of our keys (cheap check before any database lookup)."""
    return value.startswith(KEY_PREFIX) and 20 <= len(value) <= 128 and value.isascii()
