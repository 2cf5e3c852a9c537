"""Runs the program in the launcher's forked, unprivileged child (standard library only).

``run`` executes ``main.py`` as ``__main__`` in this very interpreter (no second interpreter start:
half the cost of a run; ``-S``: no site-packages), turns ``MemoryError`` and a write past the file
size limit or the disk cap into dedicated exit codes, refuses sockets at the ``socket`` module when
the kernel refused namespaces, and, for function-call tests, then answers the harness's calls from
the program's globals (calls.py).
"""

import atexit
import builtins
import errno
import os
import sys

import calls


def _block_sockets() -> None:
    import _socket
    import socket

    def refuse(*args, **kwargs):
        raise PermissionError("network access is disabled in this sandbox")

    socket.socket = socket.create_connection = socket.socketpair = socket.fromfd = refuse
    _socket.socket = _socket.socketpair = refuse


def run(path: str, block_sockets: bool, exit_codes: dict, serve_fds: tuple | None) -> None:
    """Run the program at ``path``; with ``serve_fds`` (requests, replies) serve calls after it."""
    sys.argv = [path]
    builtins.exit = builtins.quit = sys.exit  # what site.py would add
    if block_sockets:
        _block_sockets()
    main = type(sys)("__main__")  # what `python main.py` runs it as, without runpy's imports (6 ms)
    main.__file__ = path
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
        exec(code, main.__dict__)
        if serve_fds is not None:
            calls.serve(main.__dict__, *serve_fds)
    except MemoryError:
        os.write(2, b"MemoryError\n")
        os._exit(exit_codes["memory"])
    except OSError as exc:
        if exc.errno not in (errno.EFBIG, errno.ENOSPC):  # Python ignores SIGXFSZ: EFBIG surfaces here
            raise
        os.write(2, f"{os.strerror(exc.errno)}\n".encode())
        os._exit(exit_codes["file_limit"])


def finish() -> None:
    """End the program's process as a normal interpreter exit would, less the module teardown
    (5 ms a run): wait for its threads, run its ``atexit`` handlers, flush its output, exit 0."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    atexit._run_exitfuncs()
    code = 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # stdout closed or gone: what the interpreter's exit reports as 120
            code = 120
    os._exit(code)
