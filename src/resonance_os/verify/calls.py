"""Function-call tests across a process boundary: the program answers, a trusted harness judges.

Standard library only (the launcher imports it by path, with its sibling ``plain_data``). Two
halves, each in its own process of the same sandboxed run, under different uids:

- ``serve`` runs in the program's process after the program itself: it answers each call the
  harness sends (a name, positional and keyword arguments) with what the program's function of
  that name returned or raised, encoded as plain data (plain_data.py);
- ``judge`` runs in the harness process: it runs the trusted prelude (HumanEval's prompt, which
  defines helpers such as ``poly``), puts a proxy under each name the tests call on the program,
  runs the tests, and reports. A test passes only when the test code ran to its end and every call
  got a real answer: a value of a plain type, or an exception the program raised. A program that
  exits, kills itself, answers with something that is not plain data (an object whose ``__eq__`` is
  forged, a Mock) or with bytes that do not decode, fails; the comparisons are the test's own
  (``==`` on the decoded values, in the harness), so nothing the program defines takes part in them.

Frames are an 8-byte little-endian length and an encoded value.
"""

import builtins
import os

import plain_data

FORWARDED_EXCEPTIONS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception)
    and not issubclass(value, (StopIteration, StopAsyncIteration))
)  # fmt: skip
"""Built-in exceptions a program's raise is re-raised as in the harness (a test may expect one);
StopIteration is not among them: raised inside a test's ``for``/``map`` it would end the loop early."""


class FrameTooLarge(Exception):
    pass


def write_frame(fd: int, body: bytes) -> None:
    view = memoryview(len(body).to_bytes(8, "little") + body)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int):
    """The next frame's body, None at end of file; ``FrameTooLarge`` past ``limit`` bytes."""
    header = _read_exactly(fd, 8)
    if header is None:
        return None
    size = int.from_bytes(header, "little")
    if size > limit:
        raise FrameTooLarge(f"a {size}-byte answer is over the {limit}-byte limit")
    return _read_exactly(fd, size) if size else b""


def _describe(exc: BaseException) -> str:
    try:
        return str(exc)[:300]
    except Exception:  # a program's exception whose __str__ itself fails
        return ""


def serve(namespace: dict, requests: int, replies: int) -> None:
    """Program side: answer calls from ``namespace`` (the program's globals) until the harness hangs up."""
    while True:
        frame = read_frame(requests, 1 << 40)
        if frame is None:
            return
        name, args, kwargs = plain_data.decode(frame)
        function = namespace.get(name)
        if not callable(function):
            reply = ("missing", name)
        else:
            try:
                reply = ("returned", function(*args, **kwargs))
            except MemoryError:
                raise
            except Exception as exc:
                reply = ("raised", type(exc).__name__, _describe(exc))
        try:
            body = plain_data.encode(reply)
        except plain_data.NotPlainData as exc:
            body = plain_data.encode(("unencodable", f"{name} returned {exc}"))
        write_frame(replies, body)


class ProgramFailed(BaseException):
    """The program gave no usable answer. Not an ``Exception``: a test's ``except Exception`` cannot
    swallow it, and the channel remembers it, so even a bare ``except`` cannot turn it into a pass."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class ProgramRaised(Exception):
    """The program raised an exception of a type that is not built in (named in the message)."""


class CannotSend(BaseException):
    """The test passes an argument that is not plain data (a limit of this harness, not the program's fault)."""


class Channel:
    """Harness side of the two pipes: one call at a time, each answer decoded strictly."""

    def __init__(self, requests: int, replies: int, reply_limit: int) -> None:
        self.requests = requests
        self.replies = replies
        self.reply_limit = reply_limit
        self.calls = 0
        self.failure: ProgramFailed | None = None

    def fail(self, kind: str, detail: str):
        self.failure = ProgramFailed(kind, detail)
        raise self.failure

    def call(self, name: str, args: tuple, kwargs: dict):
        if self.failure is not None:
            raise self.failure
        try:
            request = plain_data.encode((name, args, kwargs))
        except plain_data.NotPlainData as exc:
            raise CannotSend(f"call {self.calls + 1} of {name}: the test passes {exc}") from None
        which = f"call {self.calls + 1} ({name})"
        try:
            write_frame(self.requests, request)
            frame = read_frame(self.replies, self.reply_limit)
        except BrokenPipeError:
            frame = None
        except FrameTooLarge as exc:
            self.fail("too_large", f"{which}: {exc}")
        if frame is None:
            self.fail("no_answer", f"the program ended before answering {which}")
        try:
            reply = plain_data.decode(frame)
        except plain_data.Malformed as exc:
            self.fail("malformed", f"{which}: the answer does not decode ({exc})")
        kind = reply[0] if type(reply) is tuple and reply and type(reply[0]) is str else None
        if kind == "returned" and len(reply) == 2:
            self.calls += 1
            return reply[1]
        if kind == "raised" and len(reply) == 3 and type(reply[1]) is str and type(reply[2]) is str:
            self.calls += 1
            if reply[1] in FORWARDED_EXCEPTIONS:
                raise getattr(builtins, reply[1])(reply[2])
            raise ProgramRaised(f"{reply[1]}: {reply[2]}")
        if kind == "unencodable" and len(reply) == 2 and type(reply[1]) is str:
            self.fail("not_plain_data", f"{which}: {reply[1][:300]}")
        if kind == "missing":
            self.fail("missing", f"the program defines no function {name!r}")
        self.fail("malformed", f"{which}: not an answer")


def _proxy(channel: Channel, name: str):
    def call(*args, **kwargs):
        return channel.call(name, args, kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def judge(prelude: str, code: str, names: list, channel: Channel) -> dict:
    """Harness side: run ``prelude``, then ``code`` with ``names`` calling the program; the verdict as a
    dict: ``passed``, ``failure`` (None, ``"assertion"``, ``"raised"``, ``"error"``, ``"cannot_send"``
    or one of ``ProgramFailed``'s kinds), ``detail`` and the number of answered ``calls``."""
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    failure, detail = None, ""
    try:
        if prelude:
            exec(compile(prelude, "<prompt>", "exec"), namespace)
        for name in names:
            namespace[name] = _proxy(channel, name)
        exec(compile(code, "<tests>", "exec"), namespace)
    except ProgramFailed:
        pass  # recorded on the channel
    except CannotSend as exc:
        failure, detail = "cannot_send", str(exc)
    except AssertionError as exc:
        failure, detail = "assertion", f"AssertionError: {_describe(exc)}".rstrip(": ")
    except ProgramRaised as exc:
        failure, detail = "raised", _describe(exc)
    except BaseException as exc:
        failure, detail = "error", f"{type(exc).__name__}: {_describe(exc)}".rstrip(": ")
    if channel.failure is not None:  # whatever the test did with it
        failure, detail = channel.failure.kind, channel.failure.detail
    return {"passed": failure is None, "failure": failure, "detail": detail, "calls": channel.calls}
