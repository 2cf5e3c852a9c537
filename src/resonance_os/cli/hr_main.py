"""Entry point of the ``resonance`` command.

Each area registers its sub-commands from its own module (``cli/<area>.py``) below; this file only
assembles them and turns user errors into one red line with exit code 2.
"""

from __future__ import annotations

import sys

import typer

from resonance_os.cli import agents as agents_cli
from resonance_os.cli import analyze as analyze_cli
from resonance_os.cli import classic as classic_cli
from resonance_os.cli import control as control_cli
from resonance_os.cli import ddpo as ddpo_cli
from resonance_os.cli import generate as generate_cli
from resonance_os.cli import llm as llm_cli
from resonance_os.cli import original_flags
from resonance_os.cli import plot as plot_cli
from resonance_os.cli import profiles as profiles_cli
from resonance_os.cli import refine as refine_cli
from resonance_os.cli import rlvr as rlvr_cli
from resonance_os.cli import scaling as scaling_cli
from resonance_os.cli import score as score_cli
from resonance_os.cli import serve as serve_cli
from resonance_os.cli import train as train_cli
from resonance_os.cli import verify as verify_cli
from resonance_os.cli.errors import USER_ERRORS, fail

app = typer.Typer(
    name="resonance",
    help="ResonanceOS: measure the Human Resonance Vector of text, write toward a profile, learn with RL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)

serve_cli.register(app)
app.command("analyze")(analyze_cli.analyze)
app.command("compare")(analyze_cli.compare)
app.command("score")(score_cli.score)
app.command("refine")(refine_cli.refine)
app.add_typer(profiles_cli.app, name="profiles")
app.add_typer(classic_cli.app, name="classic")
app.add_typer(llm_cli.app, name="llm")
app.add_typer(verify_cli.app, name="verify")
app.add_typer(rlvr_cli.app, name="rlvr")
app.add_typer(ddpo_cli.app, name="ddpo")
app.add_typer(scaling_cli.app, name="scaling")
app.add_typer(agents_cli.app, name="agents")
app.command("generate")(generate_cli.generate)
app.command("plot")(plot_cli.plot)
app.command("control")(control_cli.control)
app.command("train")(train_cli.train)
app.command("demo")(train_cli.demo)


def main() -> None:
    """Run the CLI; user errors print one red line and exit 2, our bugs keep their traceback.

    Arguments that start with the original ResonanceOS's flags (``--prompt "..." [--tenant T]
    [--profile P]``) run the original's command line (:mod:`resonance_os.cli.original_flags`).
    """
    if original_flags.is_original_form(sys.argv[1:]):
        raise SystemExit(original_flags.main(sys.argv[1:]))
    try:
        app()
    except USER_ERRORS as exc:
        raise SystemExit(fail(str(exc)).exit_code) from None


if __name__ == "__main__":
    main()
