"""What a sandboxed run's private root holds, worked out once per interpreter on the host.

A run sees a fresh tmpfs as ``/`` (launcher.py builds it and ``pivot_root``s into it) holding only:
the interpreter, its standard library (``site-packages`` masked by an empty folder), the shared
libraries the interpreter and its extension modules link against (from ``ldd``, plus ``libgcc_s``
that glibc loads for thread cancellation), ``/dev/null``, ``/dev/zero``, ``/dev/random``,
``/dev/urandom``, a fresh ``/proc`` and the run's own work folder. ``root_plan`` lists the steps
as plain tuples the launcher carries out in order, each path as the run will see it (the same path
as on the host, so the interpreter finds its files where it was built to):

- ``("dir", path)``: an empty folder;
- ``("symlink", path, target)``: the host's symbolic link, copied (``/lib -> usr/lib``);
- ``("bind", path, is_dir)``: the host's file or folder at ``path``, bound read-only;
- ``("mask", path)``: an empty read-only folder over ``path`` (the interpreter's site-packages).
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
from pathlib import Path

from resonance_os.verify.errors import SandboxUnavailableError

DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
DEVICE_LINKS = (("/dev/fd", "/proc/self/fd"), ("/dev/stdin", "/proc/self/fd/0"),
                ("/dev/stdout", "/proc/self/fd/1"), ("/dev/stderr", "/proc/self/fd/2"))  # fmt: skip
ALWAYS_LOADED = ("libgcc_s.so.1",)
"""Loaded by glibc at run time rather than linked (``pthread_exit``/cancellation unwinds with it)."""

INSPECT = (
    "import sys, sysconfig, os\n"
    "paths = sysconfig.get_paths()\n"
    "print(repr({'executable': os.path.realpath(sys.executable), 'path': [p for p in sys.path if p],"
    " 'purelib': paths['purelib'], 'platlib': paths['platlib']}))\n"
)


def _interpreter(python: str) -> dict:
    """The interpreter's real path, module search path and site-packages folders (it is asked)."""
    try:
        result = subprocess.run(
            [python, "-I", "-S", "-c", INSPECT], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailableError(f"cannot start the sandbox interpreter {python!r}: {exc}") from None
    return ast.literal_eval(result.stdout)


def _linked_libraries(files: list[str]) -> set[str]:
    """Every shared library ``files`` load (``ldd``'s ``name => path`` and the loader itself)."""
    try:
        output = subprocess.run(["ldd", *files], capture_output=True, text=True, timeout=60).stdout
    except OSError as exc:
        raise SandboxUnavailableError(
            f"cannot list the interpreter's shared libraries (ldd): {exc}"
        ) from None
    libraries = set()
    for line in output.splitlines():
        parts = line.split()
        if (
            "=>" in parts
            and len(parts) > parts.index("=>") + 1
            and parts[parts.index("=>") + 1].startswith("/")
        ):
            libraries.add(parts[parts.index("=>") + 1])
        elif parts and parts[0].startswith("/") and "(0x" in line:
            libraries.add(parts[0])  # the dynamic loader, named by its path
    folders = {os.path.dirname(library) for library in libraries}
    for name in ALWAYS_LOADED:
        libraries.update(str(Path(folder) / name) for folder in folders if (Path(folder) / name).exists())
    return libraries


class _Plan:
    """Builds the ordered steps, making each folder and copying each symbolic link on the way."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []
        self._made: set[str] = {"/"}
        self._bound_dirs: list[str] = []

    def _inside_bound(self, path: str) -> bool:
        return any(path.startswith(folder + os.sep) for folder in self._bound_dirs)

    def _reach(self, folder: str) -> str:
        """Make ``folder`` reachable in the new root as on the host; its resolved path."""
        current = "/"
        for part in Path(folder).parts[1:]:
            nxt = os.path.join(current, part)
            if nxt in self._made or self._inside_bound(nxt):
                current = os.path.realpath(nxt) if os.path.islink(nxt) else nxt
                continue
            self._made.add(nxt)
            if os.path.islink(nxt):
                target = os.readlink(nxt)
                self.steps.append(("symlink", nxt, target))
                current = self._reach(os.path.normpath(os.path.join(current, target)))
            else:
                self.steps.append(("dir", nxt))
                current = nxt
        return current

    def bind(self, path: str) -> None:
        """``path`` (a file or folder) visible at the same path; links on the way and at the end copied."""
        full = os.path.join(self._reach(os.path.dirname(path)), os.path.basename(path))
        if full in self._made or self._inside_bound(full):
            return
        self._made.add(full)
        if os.path.islink(full):
            self.steps.append(("symlink", full, os.readlink(full)))
            self.bind(os.path.realpath(full))
            return
        self.steps.append(("bind", full, os.path.isdir(full)))
        if os.path.isdir(full):
            self._bound_dirs.append(full)

    def add(self, step: tuple) -> None:
        self.steps.append(step)


@functools.lru_cache(maxsize=8)
def root_plan(python: str) -> tuple[tuple, ...]:
    """The steps that build a run's private root for the interpreter ``python`` (cached)."""
    info = _interpreter(python)
    masked = {os.path.realpath(info["purelib"]), os.path.realpath(info["platlib"])}
    plan = _Plan()
    extensions = []
    for entry in info["path"]:
        real = os.path.realpath(entry)
        if os.path.isdir(real) and real not in masked:
            plan.bind(real)
            extensions += [str(p) for p in Path(real).glob("*.so")]
    for folder in sorted(masked):
        if any(folder.startswith(os.path.realpath(e) + os.sep) for e in info["path"] if e):
            plan.add(("mask", folder))
    plan.bind(info["executable"])
    for library in sorted(_linked_libraries([info["executable"], *extensions])):
        plan.bind(library)
    for device in DEVICES:
        plan.bind(device)
    for link, target in DEVICE_LINKS:
        plan.add(("symlink", link, target))
    return tuple(plan.steps)
