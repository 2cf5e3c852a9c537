"""The original ResonanceOS command line: ``python -m resonance_os.cli.hr_main --prompt "..." [--tenant T] [--profile P]``.

It prints the original's plain-text sections (the article, then its measured HRV as a list of 8
floats) and runs the same in-process call as the original, :func:`resonance_os.api.text.in_process.hr_generate`.
``resonance`` hands its arguments here when they start with one of these flags; every sub-command
(``resonance generate`` is the full one) is unchanged.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from resonance_os.cli.errors import USER_ERRORS, fail

FLAGS = ("--prompt", "--tenant", "--profile")


def is_original_form(argv: Sequence[str]) -> bool:
    """True when the arguments start with one of the original's flags (not a sub-command)."""
    return bool(argv) and any(argv[0] == flag or argv[0].startswith(flag + "=") for flag in FLAGS)


def main(argv: Sequence[str]) -> int:
    """Parse the original's flags, write and print; returns the exit code (2 for a user error)."""
    parser = argparse.ArgumentParser(
        prog="python -m resonance_os.cli.hr_main",
        description="Write a human-resonant article (the original ResonanceOS command line; "
        "`resonance generate --help` shows the full one).",
    )
    parser.add_argument("--prompt", type=str, required=True, help="What to write about.")
    parser.add_argument(
        "--tenant", type=str, default=None, help="Tenant whose profile to use (default: default)."
    )
    parser.add_argument(
        "--profile",
        type=str,
        default=None,
        help="Profile name in the tenant, or a built-in one (professional, ...).",
    )
    args = parser.parse_args(list(argv))
    from resonance_os.api.text.in_process import SimpleRequest, hr_generate

    try:
        response = hr_generate(
            SimpleRequest(prompt=args.prompt, tenant=args.tenant, profile_name=args.profile)
        )
    except USER_ERRORS as exc:
        return fail(str(exc)).exit_code
    print("=== Generated Human-Resonant Article ===")
    print(response.article)
    print("=== HRV Feedback ===")
    print(response.hrv_feedback)
    return 0
