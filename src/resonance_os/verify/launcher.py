"""The root-side start of every sandboxed execution: isolate, drop privileges, exec the program.

``sandbox.py`` runs this file as ``python -I -S -B launcher.py CONFIG`` (standard library only, no
package imports, so it starts in a few milliseconds). ``CONFIG`` is the ``repr`` of a dictionary of
plain values, and each status line is one too: Python literals, read here with ``eval`` (the host
wrote it; it also hands over the runner's source) and there with ``ast.literal_eval``, because
``json``'s imports (``re``, ``enum``) and ``signal``'s (``enum``) cost 6 ms, a tenth of a run. As root it:

1. ``unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)`` and forks; the child is PID 1 of a new PID
   namespace (dies with the launcher through ``PR_SET_PDEATHSIG``), so when it exits the kernel
   kills every process the program left behind. The new network namespace has no interfaces up:
   nothing can be reached, nothing listened on is visible outside.
2. In the private mount namespace: a fresh ``/proc`` for the PID namespace; a read-only tmpfs over
   any folder the unprivileged user cannot traverse (``/root`` here) with the interpreter's prefix
   bound back inside it (the rest of that folder, secrets included, is hidden); every mount
   recursively read-only and ``nosuid`` (``mount_setattr``), except a bind of the work directory.
3. Forks the program: resource limits (address space, CPU, processes, open files, file size, no
   core dumps), supplementary groups cleared, ``setgid``/``setuid`` to the rollout's own
   unprivileged uid, ``chdir`` to the work directory, every other descriptor closed, a clean
   environment; then the runner runs the program in this same interpreter (no second interpreter
   start: half the cost of a run), so programs see the standard library only (``-S``: no
   site-packages).
4. Reports one status line per stage on the status descriptor: the isolation obtained, then the
   program's exit code or signal and its CPU time and peak memory.

Where the kernel refuses namespaces, step 1 and 2 are skipped and the status says so; the program's
runner then refuses sockets at the ``socket`` module instead (``network: "socket_blocked"``).
"""

import _signal
import ctypes
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (syscalls >= 424 are unified)
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
PR_SET_PDEATHSIG = 1
RUNNER_SOURCE = ""  # set from the config: the code that runs the program (sandbox.RUNNER)

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


def build_filesystem(config):
    """Runs in the new mount namespace: fresh /proc, interpreter reachable, all read-only but the work dir."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    binds = []
    for path in config["expose"]:
        ancestor = hidden_ancestor(path)
        if ancestor is not None:
            binds.append((ancestor, path, os.open(path, os.O_PATH | os.O_DIRECTORY)))
    for ancestor in sorted({ancestor for ancestor, _, _ in binds}):
        mount("tmpfs", ancestor, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
    for _, path, fd in binds:
        os.makedirs(path, mode=0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    workdir = config["workdir"]
    mount(workdir, workdir, None, MS_BIND)
    set_mount_attributes("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, recursive=True)
    set_mount_attributes(workdir, 0, MOUNT_ATTR_RDONLY, recursive=False)


def start_program(config, network):
    """Child side: limits, unprivileged identity, clean descriptors and environment, then the
    runner (and through it the program) in this very interpreter. Returns when the program ends."""
    limits = config["limits"]
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 1))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setgroups([])
        os.setgid(config["gid"])
        os.setuid(config["uid"])
        os.chdir(config["workdir"])
        os.umask(0o077)
        os.closerange(3, 65536)
        os.environ.clear()
        os.environ.update(config["env"])
    except BaseException as exc:  # the program never started: tell the host why
        os.write(2, f"resonance-sandbox: cannot start the program: {exc}\n".encode())
        os._exit(config["setup_failed_exit"])
    sys.argv = [network, "main.py"]
    exec(compile(RUNNER_SOURCE, "<sandbox runner>", "exec"), {"__name__": "__sandbox_runner__"})


def send(status, report):
    """Write ``report`` (a dictionary of plain values) to the host as one line, at once."""
    status.write(repr(report) + "\n")
    status.flush()


def run_and_report(config, status, network):
    """Fork the program, wait for it, send its exit status and resource use as one status line."""
    pid = os.fork()
    if pid == 0:
        status.close()
        start_program(config, network)
        sys.exit(0)  # normal interpreter shutdown: atexit handlers run, stdout is flushed
    _, wait_status, usage = os.wait4(pid, 0)
    report = {
        "kind": "exit",
        "exit_code": os.waitstatus_to_exitcode(wait_status) if os.WIFEXITED(wait_status) else None,
        "signal": os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "max_rss_kb": usage.ru_maxrss,
    }
    send(status, report)


def main():
    global RUNNER_SOURCE
    config = eval(sys.argv[1], {"__builtins__": {}})  # the host's repr of plain values
    RUNNER_SOURCE = config.pop("runner")
    status = os.fdopen(config["status_fd"], "w")
    try:
        if not config["use_namespaces"]:
            raise OSError("namespaces turned off (Sandbox(use_namespaces=False))")
        checked(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    except OSError as exc:
        send(status, {"kind": "isolation", "namespaces": False, "reason": str(exc)})
        closed = [hidden_ancestor(path) for path in config["expose"] if hidden_ancestor(path)]
        if closed:  # without a mount namespace the interpreter cannot be made reachable
            reason = (
                f"no namespaces ({exc}) and the interpreter's folder is inside {closed[0]}, which the "
                "unprivileged uid cannot enter; give Sandbox(python=...) an interpreter others can read"
            )
            send(status, {"kind": "setup_failed", "reason": reason})
            return
        run_and_report(config, status, "block-sockets")
        return
    send(status, {"kind": "isolation", "namespaces": True})
    init = os.fork()
    if init == 0:  # PID 1 of the new namespace: everything below it dies when it exits
        checked(libc.prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0), "prctl")
        try:
            build_filesystem(config)
        except OSError as exc:
            send(status, {"kind": "setup_failed", "reason": str(exc)})
            os._exit(1)
        run_and_report(config, status, "net-namespace")
        os._exit(0)
    os.waitpid(init, 0)


if __name__ == "__main__":
    main()
    os._exit(0)  # everything is reported and flushed; skipping the interpreter's teardown saves ms
