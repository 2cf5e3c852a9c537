"""The escape suite: hostile programs are contained, classified, and leave nothing behind."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from sandbox_checks import QUICK_TIMEOUT, SHORT, accepting, assert_clean, sandbox_without_namespaces

from resonance_os.verify import Outcome
from resonance_os.verify.sandbox import SandboxLimits


def run(sandbox, program: str, stdin: str = "", limits: SandboxLimits | None = None):
    execution = sandbox.run(program, stdin, limits)
    assert_clean(sandbox)
    return execution


def test_fork_bomb_hits_the_process_limit(sandbox):
    execution = run(sandbox, "import os\nwhile True:\n    os.fork()\n", limits=QUICK_TIMEOUT)
    # the first process dies when one of its forks is refused, or keeps forking into the wall limit
    assert execution.outcome in (Outcome.RUNTIME_ERROR, Outcome.TIMEOUT)
    assert "BlockingIOError" in execution.stderr  # forks beyond RLIMIT_NPROC were refused


def test_memory_bomb_is_a_memory_limit(sandbox):
    limits = SandboxLimits(wall_seconds=10.0, memory_bytes=160 * 1024**2)
    execution = run(
        sandbox, "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 1024 * 1024))\n", limits=limits
    )
    assert execution.outcome is Outcome.MEMORY_LIMIT


def test_infinite_loop_times_out(sandbox):
    execution = run(sandbox, "while True:\n    pass\n", limits=QUICK_TIMEOUT)
    assert execution.outcome is Outcome.TIMEOUT


def test_sleeping_forever_times_out_at_the_wall_limit(sandbox):
    execution = run(sandbox, "import time\ntime.sleep(3600)\n", limits=QUICK_TIMEOUT)
    assert execution.outcome is Outcome.TIMEOUT
    assert execution.detail == "killed at the wall-clock limit"


def test_huge_output_is_cut_at_the_output_limit(sandbox):
    execution = run(sandbox, "while True:\n    print('x' * 4096)\n")
    assert execution.outcome is Outcome.OUTPUT_LIMIT
    assert len(execution.stdout) <= SHORT.output_bytes


def test_huge_file_is_cut_at_the_file_size_limit(sandbox):
    limits = SandboxLimits(wall_seconds=3.0, file_bytes=1024**2)
    execution = run(
        sandbox,
        "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 65536)\n",
        limits=limits,
    )
    assert execution.outcome is Outcome.OUTPUT_LIMIT


def test_killing_the_parent_is_refused(sandbox):
    execution = run(sandbox, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n")
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert "PermissionError" in execution.detail


def test_killing_every_process_it_may_reaches_nothing(sandbox, namespaces):
    execution = run(sandbox, "import os, signal\nos.kill(-1, signal.SIGKILL)\n")
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert "ProcessLookupError" in execution.detail  # alone in its PID namespace under its own uid


@pytest.mark.parametrize("target", ["/tmp", "/var/tmp", "/dev/shm", "/work", "/etc", "HOST_ROOT"])
def test_nothing_outside_the_work_directory_is_writable(sandbox, namespaces, target):
    folder = str(sandbox.work_root) if target == "HOST_ROOT" else target
    path = os.path.join(folder, f"escape-{os.getpid()}")
    execution = run(sandbox, f"open({path!r}, 'w').write('escaped')\n")
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert not os.path.exists(path)


def test_the_work_directory_is_writable(sandbox):
    execution = run(sandbox, "open('notes.txt', 'w').write('kept')\nprint(open('notes.txt').read())\n")
    assert execution.outcome is None and execution.stdout == "kept\n"


def test_no_secrets_in_the_environment_or_root_home(sandbox, namespaces):
    os.environ["RESONANCE_TEST_SECRET"] = "hunter2"
    try:
        program = "import os\nprint(sorted(os.environ))\nprint(os.listdir('/root'))\nprint(os.getuid())\n"
        execution = run(sandbox, program)
    finally:
        del os.environ["RESONANCE_TEST_SECRET"]
    assert execution.outcome is None
    names, root_entries, uid = execution.stdout.splitlines()
    assert "RESONANCE_TEST_SECRET" not in names
    assert root_entries == "['.pyenv']" or ".ssh" not in root_entries
    assert int(uid) != 0


def test_a_socket_cannot_reach_a_listener_on_the_host(sandbox, namespaces):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    with accepting(listener) as accepted:
        program = (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\n"
        )
        execution = run(sandbox, program)
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert accepted == []
    assert execution.network == "namespace"


def test_a_listener_opened_inside_is_gone_afterwards(sandbox):
    program = (
        "import socket, time\n"
        "server = socket.create_server(('0.0.0.0', 0))\n"
        "print(server.getsockname()[1], flush=True)\n"
        "time.sleep(0.2)\n"
    )
    execution = run(sandbox, program)  # run() asserts no listener of a sandbox uid is left
    assert execution.outcome is None


def test_a_rollout_cannot_read_another_rollouts_files(sandbox):
    victim = "open('secret.txt', 'w').write('s3cret')\nimport time\ntime.sleep(1.2)\n"
    thief = (
        "import glob, os, time\n"
        "time.sleep(0.4)\n"
        f"root = {str(sandbox.work_root)!r}\n"
        "try:\n    print('listed', os.listdir(root))\nexcept OSError as exc:\n    print('list refused', type(exc).__name__)\n"
        "for path in glob.glob(root + '/*/secret.txt') + glob.glob('/proc/*/cwd/secret.txt'):\n"
        "    try:\n        print('read', open(path).read())\n    except OSError:\n        print('refused', path)\n"
    )
    results = {}
    threads = [
        threading.Thread(
            target=lambda k=k, p=p: results.__setitem__(k, sandbox.run(p, "", SandboxLimits(wall_seconds=10)))
        )
        for k, p in (("victim", victim), ("thief", thief))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_clean(sandbox)
    assert results["victim"].outcome is None
    assert results["thief"].outcome is None
    assert "s3cret" not in results["thief"].stdout
    assert "list refused" in results["thief"].stdout  # not there at all in its private root


def test_deep_recursion_through_c_overflowing_the_stack_is_a_runtime_error(sandbox):
    program = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return list(map(f, [n + 1]))\nf(0)\n"
    execution = run(sandbox, program)
    assert execution.outcome is Outcome.RUNTIME_ERROR
    assert execution.detail.startswith("killed by SIGSEGV")


def test_legitimately_deep_recursion_with_a_raised_limit_passes(sandbox):
    program = "import sys\nsys.setrecursionlimit(10**6)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nprint(depth(200000))\n"
    execution = run(sandbox, program)
    assert execution.outcome is None and execution.stdout == "200000\n"


def test_closing_stdout_gives_no_answer_and_does_not_hang(sandbox):
    from resonance_os.verify import StdioTest

    execution = run(sandbox, "import os, time\nos.close(1)\nos.close(2)\ntime.sleep(0.3)\n")
    assert StdioTest("", "42").judge(execution) in (Outcome.WRONG_ANSWER, Outcome.RUNTIME_ERROR)
    assert execution.outcome is not Outcome.TIMEOUT


def test_ignoring_signals_does_not_survive_the_wall_limit(sandbox):
    program = (
        "import signal, time\n"
        "for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU):\n"
        "    signal.signal(number, signal.SIG_IGN)\n"
        "while True:\n    time.sleep(0.01)\n"
    )
    execution = run(sandbox, program, limits=QUICK_TIMEOUT)
    assert execution.outcome is Outcome.TIMEOUT


@pytest.mark.slow
def test_ignoring_sigxcpu_does_not_survive_the_cpu_limit(sandbox):
    program = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n"
    execution = run(sandbox, program, limits=SandboxLimits(wall_seconds=60.0, cpu_seconds=1))
    assert execution.outcome is Outcome.TIMEOUT
    assert execution.signal == 9  # the kernel's SIGKILL at the hard CPU limit (soft + 1 s)


def test_a_daemonized_child_dies_with_the_run(sandbox, namespaces):
    program = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    started = time.perf_counter()
    execution = run(sandbox, program)  # run() asserts no process of a sandbox uid is left
    assert execution.outcome is None and execution.stdout == "parent done\n"
    assert time.perf_counter() - started < SHORT.wall_seconds  # ended with the parent, not at the limit


def test_without_namespaces_sockets_are_refused_and_nothing_is_left():
    with sandbox_without_namespaces() as plain:
        program = "import os, socket, time\nif os.fork() == 0:\n    time.sleep(60)\nsocket.socket()\n"
        execution = plain.run(program)
        assert execution.network == "socket_blocked"
        assert execution.outcome is Outcome.RUNTIME_ERROR and "network access is disabled" in execution.detail
        assert_clean(plain)  # the sleeping child was found by its uid and killed
