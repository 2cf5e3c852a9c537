"""The target options shared by the commands that take a target HRV (``--profile``, ``--hrv``,
``--store``) and the parsing of ``--hrv 0.4,0.6,...``."""

from __future__ import annotations

import typer

from resonance_os.core.env import env_names
from resonance_os.core.errors import ValidationError
from resonance_os.core.home import STORE_ENV
from resonance_os.core.hrv_constants import HRV_DIMENSIONS

ProfileOpt = typer.Option(
    None,
    "--profile",
    help="Target profile 'tenant/name' (built-ins: builtin/professional, builtin/creative, builtin/technical;"
    " default: builtin/professional).",
)
HrvOpt = typer.Option(None, "--hrv", help="Target HRV: 8 comma-separated numbers in [0, 1], in HRV order.")
StoreOpt = typer.Option(
    None,
    "--store",
    envvar=env_names(STORE_ENV),
    help="Database of profiles: a data-home folder (its resonance.db), a .db file or a SQLAlchemy URL."
    " Default: $RESONANCE_DB, else $RESONANCE_HOME (~/.resonance_os), the database `resonance serve` uses.",
    show_default=False,
)


def parse_hrv_option(text: str) -> list[float]:
    """``"0.4,0.6,..."`` -> floats (count and range are checked by ``validate_hrv`` where they are used)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise ValidationError(
            f"--hrv {text!r} is not {len(HRV_DIMENSIONS)} comma-separated numbers; "
            "e.g. --hrv 0.4,0.6,0.35,0.65,0.1,0.05,0.3,0.9 (order: " + ", ".join(HRV_DIMENSIONS) + ")"
        ) from None
