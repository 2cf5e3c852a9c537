"""A strict tagged encoding of plain Python data: what a program's answer may be (standard library only).

Encodable: ``None``, ``bool``, ``int``, ``float`` (``nan``, ``inf`` and ``-0.0`` included),
``complex``, ``str``, ``bytes``, and ``list``, ``tuple``, ``dict``, ``set``, ``frozenset`` of
those, each of exactly that type (``type(x) is int``, not a subclass): an object with a forged
``__eq__``, an ``int`` subclass or a ``unittest.mock.MagicMock`` cannot be encoded, so it never
reaches the code that compares answers. ``decode`` builds fresh values of those types only and
refuses anything else (a trailing byte, an unknown tag, a length past the end, nesting deeper than
``MAX_DEPTH``), so whoever wrote the bytes controls the value, never its type or behaviour.

Each value is a one-byte tag and its payload; lengths and counts are 4-byte little-endian.
"""

MAX_DEPTH = 100
"""Nesting allowed in a value (deeper is refused, not decoded: no recursion blow-up)."""


class NotPlainData(TypeError):
    """The value (or something inside it) is not one of the plain types."""


class Malformed(ValueError):
    """The bytes are not one well-formed encoded value."""


def _length(n):
    return n.to_bytes(4, "little")


def _encode(value, out, depth):
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if value is None:
        out.append(b"N")
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif kind is int:
        raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        out += (b"i", _length(len(raw)), raw)
    elif kind is float:
        raw = value.hex().encode()
        out += (b"f", _length(len(raw)), raw)
    elif kind is complex:
        raw = f"{value.real.hex()},{value.imag.hex()}".encode()
        out += (b"c", _length(len(raw)), raw)
    elif kind is str:
        raw = value.encode("utf-8", "surrogatepass")
        out += (b"s", _length(len(raw)), raw)
    elif kind is bytes:
        out += (b"y", _length(len(value)), value)
    elif kind in _CONTAINER_TAGS:
        items = list(value.items()) if kind is dict else list(value)
        out += (_CONTAINER_TAGS[kind], _length(len(items)))
        for item in items:
            if kind is dict:
                _encode(item[0], out, depth + 1)
                _encode(item[1], out, depth + 1)
            else:
                _encode(item, out, depth + 1)
    else:
        raise NotPlainData(f"a {kind.__module__}.{kind.__qualname__} is not plain data")


_CONTAINER_TAGS = {list: b"l", tuple: b"t", dict: b"d", set: b"S", frozenset: b"Z"}
_FLOAT_TEXT = frozenset(b"0123456789abcdefxp+-.nainf")


def encode(value) -> bytes:
    """``value`` as bytes; ``NotPlainData`` if any part of it is not exactly a plain type."""
    out = []
    _encode(value, out, 0)
    return b"".join(out)


def _float(raw):
    if not raw or not set(raw) <= _FLOAT_TEXT:
        raise Malformed("not a float")
    return float.fromhex(raw.decode())


def _decode(data, position, depth):
    if depth > MAX_DEPTH:
        raise Malformed(f"nested deeper than {MAX_DEPTH}")
    if position >= len(data):
        raise Malformed("ends inside a value")
    tag = data[position : position + 1]
    position += 1
    if tag == b"N":
        return None, position
    if tag == b"T":
        return True, position
    if tag == b"F":
        return False, position
    if position + 4 > len(data):
        raise Malformed("ends inside a length")
    size = int.from_bytes(data[position : position + 4], "little")
    position += 4
    if tag in _SCALAR_TAGS:
        end = position + size
        if end > len(data):
            raise Malformed("a length runs past the end")
        raw = data[position:end]
        if tag == b"i":
            return int.from_bytes(raw, "little", signed=True), end
        if tag == b"f":
            return _float(raw), end
        if tag == b"c":
            real, _, imag = raw.partition(b",")
            return complex(_float(real), _float(imag)), end
        if tag == b"s":
            try:
                return raw.decode("utf-8", "surrogatepass"), end
            except UnicodeDecodeError:
                raise Malformed("a string is not UTF-8") from None
        return bytes(raw), end
    if tag not in _CONTAINERS:
        raise Malformed(f"unknown tag {tag!r}")
    if size > len(data) - position:
        raise Malformed("a count runs past the end")  # every item takes at least one byte
    items = []
    for _ in range(size * 2 if tag == b"d" else size):
        item, position = _decode(data, position, depth + 1)
        items.append(item)
    try:
        if tag == b"d":
            return dict(zip(items[::2], items[1::2])), position
        return _CONTAINERS[tag](items), position
    except TypeError:  # an unhashable key or member
        raise Malformed("a set member or dict key is not hashable") from None


_SCALAR_TAGS = frozenset((b"i", b"f", b"c", b"s", b"y"))
_CONTAINERS = {b"l": list, b"t": tuple, b"d": dict, b"S": set, b"Z": frozenset}


def decode(data: bytes):
    """The one value ``data`` encodes; ``Malformed`` unless it is exactly one well-formed value."""
    data = bytes(data)
    value, end = _decode(data, 0, 0)
    if end != len(data):
        raise Malformed("bytes after the value")
    return value
