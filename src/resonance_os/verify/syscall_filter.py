"""The seccomp-BPF filter every sandboxed process runs under (standard library only: the launcher imports it).

``install()`` sets ``no_new_privs`` and loads a filter that answers ``EPERM`` to the system calls a
program has no use for and an attacker needs: debugging others (``ptrace``, ``process_vm_*``,
``kcmp``, ``pidfd_getfd``), mounting and namespaces (``mount``, ``pivot_root``, ``unshare``,
``setns``, ``clone`` with any ``CLONE_NEW*`` flag), kernel keyrings, ``bpf``, ``perf_event_open``,
``userfaultfd``, ``io_uring``, module and kexec loading, personality changes, clocks, host names,
reboot, swap, accounting and quotas, and ``memfd_create`` (memory written to one is counted by no
limit of the run but the file size). ``clone3`` answers ``ENOSYS`` (its flags live in memory a
filter cannot read), so the C library falls back to ``clone``, whose flags it can. A call made
through another ABI (x32 on x86_64) is refused; a process of another architecture is killed.
"""

import ctypes
import errno as errnos
import os

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0_LOW = 0, 4, 16  # struct seccomp_data (little-endian)
CLONE_NEW_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
PERSONALITY_QUERY = 0xFFFFFFFF
X32_SYSCALL_BIT = 0x40000000

DENIED = (
    "ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd mount umount2 pivot_root chroot "
    "mount_setattr move_mount open_tree fsopen fsconfig fsmount fspick unshare setns keyctl add_key "
    "request_key bpf perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register "
    "kexec_load kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct "
    "quotactl quotactl_fd open_by_handle_at name_to_handle_at syslog vhangup settimeofday "
    "clock_settime clock_adjtime adjtimex sethostname setdomainname lookup_dcookie memfd_create"
).split()
"""Answered with EPERM; ``clone`` (namespace flags only), ``clone3`` and ``personality`` are handled apart."""

ARCHITECTURES = {
    "x86_64": {
        "audit_arch": 0xC000003E,
        "numbers": {
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
            "pidfd_getfd": 438, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
            "mount_setattr": 442, "move_mount": 429, "open_tree": 428, "fsopen": 430, "fsconfig": 431,
            "fsmount": 432, "fspick": 433, "unshare": 272, "setns": 308, "keyctl": 250, "add_key": 248,
            "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246,
            "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
            "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179,
            "quotactl_fd": 443, "open_by_handle_at": 304, "name_to_handle_at": 303, "syslog": 103,
            "vhangup": 153, "settimeofday": 164, "clock_settime": 227, "clock_adjtime": 305,
            "adjtimex": 159, "sethostname": 170, "setdomainname": 171, "lookup_dcookie": 212,
            "memfd_create": 319, "clone": 56, "clone3": 435, "personality": 135,
            # x86_64 only
            "iopl": 172, "ioperm": 173, "uselib": 134, "_sysctl": 156,
        },
        "extra_denied": ("iopl", "ioperm", "uselib", "_sysctl"),
        "other_abi_bit": X32_SYSCALL_BIT,
    },
    "aarch64": {
        "audit_arch": 0xC00000B7,
        "numbers": {
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
            "pidfd_getfd": 438, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
            "mount_setattr": 442, "move_mount": 429, "open_tree": 428, "fsopen": 430, "fsconfig": 431,
            "fsmount": 432, "fspick": 433, "unshare": 97, "setns": 268, "keyctl": 219, "add_key": 217,
            "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 104,
            "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
            "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60,
            "quotactl_fd": 443, "open_by_handle_at": 265, "name_to_handle_at": 264, "syslog": 116,
            "vhangup": 58, "settimeofday": 170, "clock_settime": 112, "clock_adjtime": 266,
            "adjtimex": 171, "sethostname": 161, "setdomainname": 162, "lookup_dcookie": 18,
            "memfd_create": 279, "clone": 220, "clone3": 435, "personality": 92,
        },
        "extra_denied": (),
        "other_abi_bit": None,
    },
}  # fmt: skip
"""System call numbers per architecture (checked against the kernel headers by tests/verify)."""


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter for ``machine`` (``os.uname().machine``) as ``(code, jt, jf, k)`` instructions."""
    if machine not in ARCHITECTURES:
        raise OSError(errnos.ENOSYS, f"no seccomp filter for architecture {machine!r}")
    arch = ARCHITECTURES[machine]
    numbers = arch["numbers"]
    denied = [numbers[name] for name in DENIED] + [numbers[name] for name in arch["extra_denied"]]
    # Layout: checks, then four returns at the end: EPERM, ENOSYS, ALLOW, and the clone/personality
    # argument checks jump into them; each jump is relative to the next instruction.
    body: list[tuple[int, str | int, str | int, int]] = [
        (BPF_LD_W_ABS, 0, 0, OFFSET_ARCH),
        (BPF_JEQ_K, 0, "kill", arch["audit_arch"]),
        (BPF_LD_W_ABS, 0, 0, OFFSET_NR),
    ]
    if arch["other_abi_bit"] is not None:
        body.append((BPF_JGE_K, "eperm", 0, arch["other_abi_bit"]))
    body += [(BPF_JEQ_K, "eperm", 0, number) for number in denied]
    body += [
        (BPF_JEQ_K, "enosys", 0, numbers["clone3"]),
        (BPF_JEQ_K, "clone", 0, numbers["clone"]),
        (BPF_JEQ_K, "personality", 0, numbers["personality"]),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ("clone", 0, 0, 0),
        (BPF_LD_W_ABS, 0, 0, OFFSET_ARG0_LOW),
        (BPF_JSET_K, "eperm", "allow", CLONE_NEW_FLAGS),
        ("personality", 0, 0, 0),
        (BPF_LD_W_ABS, 0, 0, OFFSET_ARG0_LOW),
        (BPF_JEQ_K, "allow", "eperm", PERSONALITY_QUERY),
        ("allow", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ("eperm", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errnos.EPERM),
        ("enosys", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errnos.ENOSYS),
        ("kill", 0, 0, 0),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    labels: dict[str, int] = {}
    instructions = []
    for entry in body:
        if isinstance(entry[0], str):
            labels[entry[0]] = len(instructions)
        else:
            instructions.append(entry)

    def offset(target: str | int, position: int) -> int:
        if isinstance(target, int):
            return target
        distance = labels[target] - position - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"seccomp jump to {target} out of range ({distance})")
        return distance

    return [
        (code, offset(jt, position), offset(jf, position), k)
        for position, (code, jt, jf, k) in enumerate(instructions)
    ]


def install(libc: ctypes.CDLL) -> None:
    """``no_new_privs``, then the filter, on the calling thread (and so on all its children)."""
    instructions = program(os.uname().machine)
    filters = (SockFilter * len(instructions))(*[SockFilter(*i) for i in instructions])
    fprog = SockFprog(len(instructions), filters)
    for option, args in (
        (PR_SET_NO_NEW_PRIVS, (ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))),
        (
            PR_SET_SECCOMP,
            (ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)),
        ),
    ):
        if libc.prctl(ctypes.c_int(option), *args) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"prctl({option}): {errnos.errorcode.get(error, error)}")
