"""Run untrusted Python in a separate, isolated, unprivileged process with hard limits.

``Sandbox.run(program, stdin)`` starts ``launcher.py`` as root in a new session; the launcher puts
the program in new mount, network, PID, IPC and UTS namespaces (or says it could not), in a private
root that holds only the interpreter, its standard library and the run's own size-capped work
folder, and forks the program's process, which drops to a uid of its own (one per concurrent run,
so ``RLIMIT_NPROC`` counts only that run and runs cannot read each other's files), takes the limits,
``no_new_privs`` and a seccomp filter. This side feeds stdin from a file, reads stdout, stderr and
the launcher's status while counting bytes, enforces the wall-clock limit, and when the run ends
kills the process group, then every process left under the run's uids, and deletes the work folder.

``Sandbox.run(program, calls=CallTests(...))`` runs function-call tests: the launcher also starts a
trusted harness under a second uid that calls the program's functions over pipes and judges the
answers (calls.py); its verdict comes back as ``Execution.harness``.

The launcher runs under the base interpreter (``python -I -S``: the standard library only, not
this project's virtual environment); the program runs as ``main.py`` in the launcher's forked,
unprivileged child through runner.py.
"""

from __future__ import annotations

import ast
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from resonance_os.core.errors import ValidationError
from resonance_os.verify.errors import SandboxUnavailableError
from resonance_os.verify.outcomes import (
    FILE_LIMIT_EXIT_CODE,
    MEMORY_EXIT_CODE,
    SETUP_FAILED_EXIT_CODE,
    Outcome,
    classify_exit,
)
from resonance_os.verify.private_root import root_plan

LAUNCHER = Path(__file__).with_name("launcher.py")
EXIT_CODES = {
    "memory": MEMORY_EXIT_CODE,
    "file_limit": FILE_LIMIT_EXIT_CODE,
    "setup_failed": SETUP_FAILED_EXIT_CODE,
}
"""Exit codes the runner and launcher use for MemoryError, a full disk or file, a failed start."""
BYTES_PER_FILE = 4096
"""The work folder allows one file (inode) per this many bytes of ``disk_bytes``."""


@dataclass(frozen=True)
class CallTests:
    """Function-call tests for the trusted harness: ``code`` (asserts, or a HumanEval ``check`` and
    its call) runs after the trusted ``prelude`` (HumanEval's prompt: helpers the check uses), with
    each of ``names`` a proxy that calls the program's function of that name."""

    code: str
    names: tuple[str, ...]
    prelude: str = ""


STDERR_KEEP_BYTES = 16_384


def launcher_reports(status: bytes) -> list[dict]:
    """The launcher's complete status lines, each the ``repr`` of a dictionary of plain values
    (launcher.py); a line cut short (the launcher killed while writing it) is not one."""
    return [ast.literal_eval(line.decode()) for line in status.split(b"\n")[:-1] if line.strip()]


@dataclass(frozen=True)
class SandboxLimits:
    """Hard limits of one execution (defaults: NousCoder's 15 s and 4 GB).

    ``cpu_seconds`` defaults to the wall limit; ``output_bytes`` caps stdout and stderr each (and a
    function's encoded answer); ``file_bytes`` caps any file the program writes (``RLIMIT_FSIZE``);
    ``disk_bytes`` caps everything it writes (its work folder is a tmpfs of that size, one file per
    4 KiB of it).
    """

    wall_seconds: float = 15.0
    cpu_seconds: int | None = None
    memory_bytes: int = 4 * 1024**3
    processes: int = 64
    open_files: int = 64
    output_bytes: int = 16 * 1024**2
    file_bytes: int = 16 * 1024**2
    disk_bytes: int = 64 * 1024**2

    def __post_init__(self) -> None:
        names = (
            "wall_seconds",
            "memory_bytes",
            "processes",
            "open_files",
            "output_bytes",
            "file_bytes",
            "disk_bytes",
        )
        for name in names:
            if not getattr(self, name) > 0:
                raise ValidationError(f"SandboxLimits.{name} must be positive, got {getattr(self, name)!r}")
        if self.cpu_seconds is not None and not self.cpu_seconds >= 1:
            raise ValidationError(
                f"SandboxLimits.cpu_seconds must be a whole number >= 1 or None, got {self.cpu_seconds!r}"
            )

    @property
    def effective_cpu_seconds(self) -> int:
        return self.cpu_seconds if self.cpu_seconds is not None else max(1, int(self.wall_seconds + 0.999))


@dataclass
class Execution:
    """What one sandboxed run did. ``outcome`` is None when the program exited cleanly (the test
    decides between passed and wrong answer); ``network`` is ``"namespace"`` or ``"socket_blocked"``.
    ``harness`` is the harness's verdict of a run with ``calls`` (``passed``, ``failure``, ``detail``,
    ``calls``: see calls.judge), None when it gave none; the program is killed once it is judged
    (then ``outcome`` is None and ``signal`` SIGKILL)."""

    outcome: Outcome | None
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float = 0.0
    max_rss_kb: int = 0
    network: str = "namespace"
    detail: str = ""
    harness: dict | None = None


UID_LOCKS = Path(tempfile.gettempdir()) / "resonance-verify-uids"


class _UidPool:
    """Unprivileged uids, two per concurrent run: the program's and its harness's (process limits
    and file access are per uid, and the harness must be out of the program's reach).

    Each uid is held machine-wide through an ``flock`` on ``UID_LOCKS/<uid>``, so sandboxes in other
    processes (parallel test runs, several trainers) never share one, whatever their ranges, and a
    uid freed by a crashed process (its lock dies with it) is reused.
    """

    def __init__(self, first: int, count: int, max_concurrency: int) -> None:
        self._uids = range(first, first + count)
        self._available = threading.Semaphore(max_concurrency)
        self._held: dict[int, int] = {}
        self._lock = threading.Lock()
        UID_LOCKS.mkdir(mode=0o700, exist_ok=True)

    def _try_lock(self, uid: int) -> bool:
        fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._held[uid] = fd
        return True

    def acquire(self) -> tuple[int, int]:
        """``(program uid, harness uid)``, both locked."""
        self._available.acquire()
        while True:
            with self._lock:
                got = []
                for uid in self._uids:
                    if uid not in self._held and self._try_lock(uid):
                        got.append(uid)
                        if len(got) == 2:
                            return got[0], got[1]
                for uid in got:  # only one free here: give it back and wait
                    os.close(self._held.pop(uid))
            time.sleep(0.05)  # the uids of the range are held by other runs and processes

    def release(self, uids: tuple[int, int]) -> None:
        with self._lock:
            for uid in uids:
                os.close(self._held.pop(uid))  # closing the descriptor drops the flock
        self._available.release()


def processes_of(uids: range | tuple[int, ...] | int) -> list[int]:
    """PIDs of live (not zombie) processes whose real uid is ``uids`` (or one of them), from /proc."""
    wanted = (uids,) if isinstance(uids, int) else uids
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as status:
                for line in status:
                    if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                        break  # dead, waiting to be reaped by its parent: holds nothing
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) in wanted:
                            pids.append(int(entry))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return pids


def kill_processes_of(uids: tuple[int, ...] | int, attempts: int = 50) -> None:
    """SIGKILL every process of ``uids`` until none is left (a fork bomb may still be forking)."""
    for _ in range(attempts):
        pids = processes_of(uids)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Sandbox:
    """Runs untrusted Python programs; thread-safe, up to ``max_concurrency`` runs at once.

    Args:
        limits: default limits of each run (a run may pass its own).
        max_concurrency: runs allowed at the same time (each holds one uid of the pool).
        first_uid, uid_count: the uids runs may take, ``[first_uid, first_uid + uid_count)``, two
            per run (the program's and its harness's); pick a range no real account uses (shared
            machine-wide with other sandboxes through locks).
        use_namespaces: isolate in new namespaces and a private root when the kernel allows; False
            runs with only the uids, the limits, the seccomp filter and the socket-layer refusal
            (much weaker: the host's filesystem is visible, world-writable folders such as /tmp
            stay writable, no disk cap, no IPC isolation).
        python: interpreter of the launcher and the programs (default: the base interpreter of
            this Python; programs get its standard library only).
        work_root: folder for the per-run work directories (default: a new temporary folder).
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        max_concurrency: int = 32,
        first_uid: int = 61_000,
        uid_count: int = 1_000,
        use_namespaces: bool = True,
        python: str | None = None,
        work_root: str | Path | None = None,
    ) -> None:
        if os.geteuid() != 0:
            raise SandboxUnavailableError(
                "the sandbox must start as root to drop each run to its own unprivileged uid and "
                "to create namespaces; run as root (for example inside a container)"
            )
        if not 1 <= max_concurrency <= uid_count // 2:
            raise ValidationError(
                f"max_concurrency must be in [1, uid_count // 2 = {uid_count // 2}] (each run takes two "
                f"uids), got {max_concurrency}"
            )
        self.limits = limits or SandboxLimits()
        self.python = python or os.path.realpath(sys._base_executable)  # type: ignore[attr-defined]
        self._root_plan = list(root_plan(self.python)) if use_namespaces else []
        self._uids = _UidPool(first_uid, uid_count, max_concurrency)
        self.use_namespaces = use_namespaces
        root = (
            Path(work_root) if work_root is not None else Path(tempfile.mkdtemp(prefix="resonance-verify-"))
        )
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o711)  # others may enter their own folder but not list the others
        closed = [str(folder) for folder in root.resolve().parents if not folder.stat().st_mode & 0o001]
        if closed:
            raise SandboxUnavailableError(
                f"work_root {str(root)!r} is inside {closed[0]!r}, which other users cannot enter, so the "
                "unprivileged runs could not reach their folders; choose a folder under /tmp"
            )
        self.work_root = root

    def close(self) -> None:
        """Delete the work root (runs delete their own folders as they end)."""
        shutil.rmtree(self.work_root, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(
        self,
        program: str,
        stdin: str = "",
        limits: SandboxLimits | None = None,
        *,
        calls: CallTests | None = None,
    ) -> Execution:
        """Run ``program`` (Python source) with ``stdin`` (and, given ``calls``, the harness judging
        its functions); never raises for anything the program does."""
        limits = limits or self.limits
        uids = self._uids.acquire()
        workdir = Path(tempfile.mkdtemp(prefix="run-", dir=self.work_root))
        try:
            kill_processes_of(uids)  # a previous holder of these uids left nothing behind, make sure
            return self._run_in(workdir, uids, program, stdin, limits, calls)
        finally:
            kill_processes_of(uids)
            shutil.rmtree(workdir, ignore_errors=True)
            self._uids.release(uids)

    def _run_in(
        self,
        workdir: Path,
        uids: tuple[int, int],
        program: str,
        stdin: str,
        limits: SandboxLimits,
        calls: CallTests | None,
    ) -> Execution:
        uid, harness_uid = uids
        main = workdir / "main.py"
        main.write_text(program, encoding="utf-8")
        os.chown(main, uid, uid)
        os.chmod(main, 0o600)
        os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
        stdin_file = tempfile.TemporaryFile(dir=self.work_root)
        stdin_file.write(stdin.encode("utf-8"))
        stdin_file.seek(0)
        status_read, status_write = os.pipe()
        pass_fds = [status_write]
        harness = None
        if calls is not None:  # the tests travel on a descriptor only the harness process reads
            payload = tempfile.TemporaryFile(dir=self.work_root)
            payload.write(
                repr({"prelude": calls.prelude, "code": calls.code, "names": list(calls.names)}).encode()
            )
            payload.seek(0)
            pass_fds.append(payload.fileno())
            harness = {
                "uid": harness_uid,
                "payload_fd": payload.fileno(),
                "reply_limit": limits.output_bytes,
            }
        config = {
            "status_fd": status_write,
            "workdir": str(workdir),
            "root_plan": self._root_plan,
            "uid": uid,
            "gid": uid,
            "harness": harness,
            "env": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            "limits": {
                "memory_bytes": limits.memory_bytes,
                "cpu_seconds": limits.effective_cpu_seconds,
                "processes": limits.processes,
                "open_files": limits.open_files,
                "file_bytes": limits.file_bytes,
                "disk_bytes": limits.disk_bytes,
                "disk_files": max(256, limits.disk_bytes // BYTES_PER_FILE),
            },
            "exit_codes": EXIT_CODES,
            "use_namespaces": self.use_namespaces,
        }
        start = time.perf_counter()
        try:
            process = subprocess.Popen(
                [self.python, "-I", "-S", str(LAUNCHER), repr(config)],
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=tuple(pass_fds),
                start_new_session=True,
                env={},
                cwd="/",
            )
        finally:
            os.close(status_write)
            stdin_file.close()
            if calls is not None:
                payload.close()
        with os.fdopen(status_read, "rb") as status:
            stdout, stderr, status_bytes, killed_for = self._collect(process, status, limits, start)
        reports = launcher_reports(status_bytes)
        seconds = time.perf_counter() - start
        return self._execution(reports, stdout, stderr, killed_for, seconds, limits)

    def _collect(
        self, process: subprocess.Popen, status, limits: SandboxLimits, start: float
    ) -> tuple[bytes, bytes, bytes, Outcome | None]:
        """Read stdout, stderr and the launcher's status until the run ends; kill it at the wall
        limit (unless the program's exit is already reported) or at the output cap."""
        selector = selectors.DefaultSelector()
        out = bytearray()
        err = bytearray()
        status_bytes = bytearray()
        err_total = 0
        selector.register(process.stdout, selectors.EVENT_READ, out)
        selector.register(process.stderr, selectors.EVENT_READ, err)
        selector.register(status, selectors.EVENT_READ, status_bytes)
        killed_for: Outcome | None = None
        deadline = start + limits.wall_seconds
        try:
            launcher_done = False
            while selector.get_map():
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    if not any(report["kind"] == "exit" for report in launcher_reports(status_bytes)):
                        killed_for = Outcome.TIMEOUT
                    break
                # Once the launcher has exited the program has ended; a process it left behind may
                # still hold the pipes (only without a PID namespace): read what is there and stop.
                ready = selector.select(timeout=0 if launcher_done else min(remaining, 0.1))
                if launcher_done and not ready:
                    break
                launcher_done = process.poll() is not None
                for key, _ in ready:
                    chunk = os.read(key.fd, 65_536)
                    if not chunk:
                        selector.unregister(key.fileobj)
                        continue
                    if key.data is status_bytes:
                        status_bytes += chunk
                    elif key.data is out:
                        out += chunk
                        if len(out) > limits.output_bytes:
                            killed_for = Outcome.OUTPUT_LIMIT
                    else:
                        err_total += len(chunk)
                        err += chunk
                        del err[:-STDERR_KEEP_BYTES]
                        if err_total > limits.output_bytes:
                            killed_for = Outcome.OUTPUT_LIMIT
                if killed_for is not None:
                    break
        finally:
            selector.close()
            if killed_for is not None:
                _kill_group(process)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:  # the launcher itself is stuck: end it and its group
                _kill_group(process)
                process.wait()
            process.stdout.close()
            process.stderr.close()
        return bytes(out[: limits.output_bytes]), bytes(err), bytes(status_bytes), killed_for

    @staticmethod
    def _execution(
        reports: list[dict],
        stdout: bytes,
        stderr: bytes,
        killed_for: Outcome | None,
        seconds: float,
        limits: SandboxLimits,
    ) -> Execution:
        by_kind = {report["kind"]: report for report in reports}
        isolation = by_kind.get("isolation", {})
        network = "namespace" if isolation.get("namespaces") else "socket_blocked"
        exit_report = by_kind.get("exit", {})
        text_out = stdout.decode("utf-8", errors="replace")
        text_err = stderr.decode("utf-8", errors="replace")
        common = {
            "exit_code": exit_report.get("exit_code"),
            "signal": exit_report.get("signal"),
            "stdout": text_out,
            "stderr": text_err,
            "seconds": seconds,
            "cpu_seconds": exit_report.get("cpu_seconds", 0.0),
            "max_rss_kb": exit_report.get("max_rss_kb", 0),
            "network": network,
        }
        if killed_for is not None:
            common["harness"] = by_kind.get("harness")
            limit = "wall-clock limit" if killed_for is Outcome.TIMEOUT else "output limit"
            return Execution(outcome=killed_for, detail=f"killed at the {limit}", **common)
        if "setup_failed" in by_kind:
            return Execution(Outcome.SANDBOX_ERROR, detail=by_kind["setup_failed"]["reason"], **common)
        if not exit_report:
            return Execution(Outcome.SANDBOX_ERROR, detail="the launcher reported no exit status", **common)
        common["harness"] = by_kind.get("harness")
        if exit_report.get("ended_after_verdict"):  # still running when judged: the launcher ended it
            return Execution(
                outcome=None, detail="ended by the sandbox after the harness's verdict", **common
            )
        outcome = classify_exit(exit_report["exit_code"], exit_report["signal"])
        if (
            exit_report["signal"] == signal.SIGKILL
            and exit_report["cpu_seconds"] >= limits.effective_cpu_seconds
        ):
            outcome = Outcome.TIMEOUT  # SIGXCPU ignored: the kernel's SIGKILL at the hard CPU limit
        detail = text_err.strip().splitlines()[-1] if outcome is not None and text_err.strip() else ""
        if exit_report["signal"] is not None:
            detail = f"killed by {signal.Signals(exit_report['signal']).name}" + (
                f": {detail}" if detail else ""
            )
        return Execution(outcome=outcome, detail=detail, **common)
