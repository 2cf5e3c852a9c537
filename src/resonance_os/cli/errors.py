"""How the CLI reports user errors: one red line on stderr and exit code 2."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from resonance_os.core.errors import ResonanceError
from resonance_os.rl.errors import RLError

USER_ERRORS: tuple[type[BaseException], ...] = (ResonanceError, RLError)
"""Exception types caused by user input; everything else is our bug and keeps its traceback."""

error_console = Console(stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")


def fail(message: str) -> typer.Exit:
    """Print ``message`` (plain text: "[grpo]" stays as written) as one red error line and return
    the exit to raise (code 2)."""
    error_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True)
    return typer.Exit(code=2)


def run_reporting_user_errors(call: Callable[[], T]) -> T:
    """Run ``call``; turn a user error into one red line and exit code 2."""
    try:
        return call()
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
