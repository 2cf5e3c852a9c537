"""Entry point of the ``resonance`` command.

Each area registers its sub-commands from its own module (``cli/<area>.py``) below; this file only
assembles them and turns user errors into one red line with exit code 2.
"""

from __future__ import annotations

import typer

from resonance_os.cli.errors import USER_ERRORS, fail

app = typer.Typer(
    name="resonance",
    help="ResonanceOS: measure the Human Resonance Vector of text, write toward a profile, learn with RL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def main() -> None:
    """Run the CLI; user errors print one red line and exit 2, our bugs keep their traceback."""
    try:
        app()
    except USER_ERRORS as exc:
        raise SystemExit(fail(str(exc)).exit_code) from None


if __name__ == "__main__":
    main()
