"""The root-side start of every sandboxed execution: isolate, drop privileges, run the program.

``sandbox.py`` runs this file as ``python -I -S launcher.py CONFIG`` (standard library only: it
imports its siblings ``runner``, ``calls``, ``plain_data`` and ``syscall_filter`` by path, their
bytecode cached beside them, no package imports, so it starts in a few milliseconds; then it turns
bytecode writing off for the program). ``CONFIG`` is the ``repr`` of a dictionary of plain
values, and each status line is one too: Python literals, read here with ``eval`` (the host wrote
it) and there with ``ast.literal_eval``, because ``json``'s imports (``re``, ``enum``) cost 6 ms, a
tenth of a run. As root it:

1. ``unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS)`` and forks;
   the child is PID 1 of a new PID namespace (dies with the launcher through ``PR_SET_PDEATHSIG``),
   so when it exits the kernel kills every process the program left behind. The network namespace
   has no interfaces up; the IPC namespace gives the run its own System V objects and POSIX message
   queues, gone with it, System V shared memory capped at ``disk_bytes``.
2. Builds a private root (private_root.py lists what goes in) on a small tmpfs: the interpreter,
   the standard library, the shared libraries they load, four devices, a fresh ``/proc`` mounted
   with ``hidepid=2`` (a process sees only its own uid's processes) and the work folder
   ``/sandbox``, a tmpfs of at most ``disk_bytes``; then ``pivot_root`` into it and detaches the
   host's tree, and makes every mount read-only and ``nosuid`` except ``/sandbox``. Nothing of the
   host's filesystem (its ``/tmp`` and Unix sockets, the tests, the package data) is left to see.
3. Forks the program: resource limits, supplementary groups cleared, ``setgid``/``setuid`` to the
   run's own unprivileged uid, every other descriptor closed, a clean environment,
   ``no_new_privs`` and the seccomp filter (syscall_filter.py); then runner.py runs the program in
   this same interpreter. For a function-call test it also forks the harness under a second uid
   (same limits and filter), which alone reads the tests from their descriptor and judges the
   program's answers over two pipes (calls.py); when the harness is done the program is killed.
4. Reports one status line per stage on the status descriptor: the isolation obtained, the
   harness's verdict (function-call tests), then the program's exit code or signal, CPU time and
   peak memory.

Where the kernel refuses namespaces, steps 1 and 2 are skipped and the status says so; the program
then runs in a host folder with sockets refused at the ``socket`` module (``network:
"socket_blocked"``), still under its uid, limits and seccomp filter.
"""

import _signal
import ctypes
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calls  # noqa: E402  (siblings, by path: no package import)
import runner  # noqa: E402
import syscall_filter  # noqa: E402

del sys.path[0]
sys.dont_write_bytecode = True  # the launcher's own modules are cached; the program writes nothing

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (syscalls >= 424 are unified)
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
PR_SET_PDEATHSIG = 1
WORKDIR = "/sandbox"  # the run's work folder inside its private root

libc = ctypes.CDLL(None, use_errno=True)


class MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def checked(rc, what):
    if rc != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source, target, fstype, flags, data=None):
    checked(
        libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def set_mount_attributes(path, attr_set, attr_clr, recursive):
    attr = MountAttr(attr_set, attr_clr, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    rc = libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        path.encode(),
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    checked(rc, f"mount_setattr {path}")


def hidden_ancestor(path):
    """The outermost folder on ``path`` that users other than root cannot traverse, or None."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & 0o001:
            return current
    return None


def build_root(config):
    """Runs as PID 1 of the new namespaces: the private root (see the module docstring), entered."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = config["workdir"]  # the host's folder for this run becomes the mount point of its root
    with open(os.path.join(root, "main.py"), "rb") as source:
        program = source.read()
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096")
    for step in config["root_plan"]:
        kind, path = step[0], root + step[1]
        if kind == "dir":
            os.mkdir(path, 0o755)
        elif kind == "symlink":
            os.symlink(step[2], path)
        elif kind == "bind":
            if step[2]:
                os.mkdir(path, 0o755)
            else:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
            mount(step[1], path, None, MS_BIND | MS_REC)
        elif kind == "mask":
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4k,nr_inodes=2")
    os.mkdir(root + "/proc", 0o555)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    cap_ipc(root + "/proc/sys", config["limits"]["disk_bytes"])
    work = root + WORKDIR
    os.mkdir(work, 0o700)
    uid, gid, limits = config["uid"], config["gid"], config["limits"]
    options = f"mode=0700,uid={uid},gid={gid},size={limits['disk_bytes']},nr_inodes={limits['disk_files']}"
    mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, options)
    descriptor = os.open(work + "/main.py", os.O_CREAT | os.O_WRONLY, 0o600)
    os.write(descriptor, program)
    os.fchown(descriptor, uid, gid)
    os.close(descriptor)
    os.chdir(root)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(f"no pivot_root number for architecture {os.uname().machine!r}")
    checked(libc.syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    checked(libc.umount2(b".", MNT_DETACH), "umount the host's root")
    os.chdir("/")
    set_mount_attributes("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, recursive=True)
    set_mount_attributes(WORKDIR, 0, MOUNT_ATTR_RDONLY, recursive=False)


def cap_ipc(sysctl, cap_bytes):
    """The run's IPC namespace may hold at most ``cap_bytes`` of System V shared memory (and each
    segment is removed when no process has it attached), ``cap_bytes`` of message queues."""
    pages = max(1, cap_bytes // os.sysconf("SC_PAGE_SIZE"))
    for name, value in (
        ("kernel/shmmax", cap_bytes),
        ("kernel/shmall", pages),
        ("kernel/shm_rmid_forced", 1),
        ("kernel/msgmnb", min(cap_bytes, 2**31 - 1)),
        ("fs/mqueue/msgsize_max", min(cap_bytes, 8192)),
        ("fs/mqueue/queues_max", 16),
    ):
        try:
            with open(f"{sysctl}/{name}", "w") as setting:
                setting.write(str(value))
        except OSError as exc:  # refuse the run rather than leave its IPC uncapped
            raise OSError(exc.errno, f"cannot cap the run's IPC namespace ({name}): {exc.strerror}") from None


def close_all_but(keep):
    start = 3
    for fd in sorted(keep) + [65536]:
        os.closerange(start, fd)
        start = fd + 1


def drop_privileges(config, uid, workdir, keep):
    """Limits, ``uid``, ``workdir``, descriptors ``keep`` (and 0-2) only, a clean environment, the filter."""
    limits = config["limits"]
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    os.chdir(workdir)
    os.umask(0o077)
    close_all_but(keep)
    os.environ.clear()
    os.environ.update(config["env"], HOME=workdir, TMPDIR=workdir)
    syscall_filter.install(libc)


def start_program(config, workdir, block_sockets, serve_fds):
    """Child side: unprivileged, then the runner (and through it the program) in this very
    interpreter. Returns when the program (and, for a call test, its serving) ends."""
    try:
        drop_privileges(config, config["uid"], workdir, serve_fds or ())
    except BaseException as exc:  # the program never started: tell the host why
        os.write(2, f"resonance-sandbox: cannot start the program: {exc}\n".encode())
        os._exit(config["exit_codes"]["setup_failed"])
    runner.run("main.py", block_sockets, config["exit_codes"], serve_fds)


def run_harness(config, status, requests, replies):
    """Harness child: read the tests (only this process ever holds them), drop to the harness uid,
    judge the program's answers, report the verdict. Never returns."""
    harness = config["harness"]
    try:
        with os.fdopen(harness["payload_fd"], "rb") as payload:
            spec = eval(payload.read().decode(), {"__builtins__": {}})  # the host's repr of plain values
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        drop_privileges(config, harness["uid"], "/", (status.fileno(), requests, replies))
        verdict = calls.judge(spec["prelude"], spec["code"], spec["names"],
                              calls.Channel(requests, replies, harness["reply_limit"]))  # fmt: skip
        send(status, {"kind": "harness", **verdict})
    except BaseException as exc:
        send(status, {"kind": "setup_failed", "reason": f"the test harness failed: {exc!r}"})
    os._exit(0)


def send(status, report):
    """Write ``report`` (a dictionary of plain values) to the host as one line, at once."""
    status.write(repr(report) + "\n")
    status.flush()


def run_and_report(config, status, workdir, block_sockets):
    """Fork the program (and the harness), wait, send the program's exit status and resource use."""
    serve_fds = harness_fds = None
    ended_by_us = False
    if config["harness"] is not None:
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()
        serve_fds, harness_fds = (requests_read, replies_write), (requests_write, replies_read)
    pid = os.fork()
    if pid == 0:
        status.close()
        start_program(config, workdir, block_sockets, serve_fds)
        runner.finish()  # threads joined, atexit handlers run, output flushed; no module teardown
    if harness_fds is not None:
        for fd in serve_fds:
            os.close(fd)
        harness = os.fork()
        if harness == 0:
            run_harness(config, status, *harness_fds)
        for fd in (*harness_fds, config["harness"]["payload_fd"]):
            os.close(fd)
        os.waitpid(harness, 0)
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:  # still running
            os.kill(pid, _signal.SIGKILL)  # judged: whatever the program still does is moot
            ended_by_us = True
    _, wait_status, usage = os.wait4(pid, 0)
    signal = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None
    report = {
        "kind": "exit",
        "exit_code": os.waitstatus_to_exitcode(wait_status) if os.WIFEXITED(wait_status) else None,
        "signal": signal,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
        "ended_after_verdict": ended_by_us and signal == _signal.SIGKILL,
    }
    send(status, report)


def main():
    config = eval(sys.argv[1], {"__builtins__": {}})  # the host's repr of plain values
    status = os.fdopen(config["status_fd"], "w")
    try:
        if not config["use_namespaces"]:
            raise OSError("namespaces turned off (Sandbox(use_namespaces=False))")
        flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
        checked(libc.unshare(flags), "unshare")
    except OSError as exc:
        send(status, {"kind": "isolation", "namespaces": False, "reason": str(exc)})
        closed = hidden_ancestor(sys.base_prefix)
        if closed:  # without a mount namespace the interpreter cannot be made reachable
            reason = (
                f"no namespaces ({exc}) and the interpreter's folder is inside {closed}, which the "
                "unprivileged uid cannot enter; give Sandbox(python=...) an interpreter others can read"
            )
            send(status, {"kind": "setup_failed", "reason": reason})
            return
        run_and_report(config, status, config["workdir"], block_sockets=True)
        return
    send(status, {"kind": "isolation", "namespaces": True})
    init = os.fork()
    if init == 0:  # PID 1 of the new namespace: everything below it dies when it exits
        checked(libc.prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "prctl")
        try:
            build_root(config)
        except OSError as exc:
            send(status, {"kind": "setup_failed", "reason": str(exc)})
            os._exit(1)
        run_and_report(config, status, WORKDIR, block_sockets=False)
        os._exit(0)
    os.waitpid(init, 0)


if __name__ == "__main__":
    main()
    os._exit(0)  # everything is reported and flushed; skipping the interpreter's teardown saves ms
