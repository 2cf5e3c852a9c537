"""How the CLI shows HRV numbers: one gap sign convention (``core.hrv_constants.GAP_CONVENTION``, the
Studio's and the API's too) and each dimension's and reward term's meaning next to its number."""

from __future__ import annotations

from rich.table import Table

from resonance_os.core.hrv_constants import GAP_CONVENTION, HRV_DESCRIPTIONS, REWARD_TERM_MEANINGS

__all__ = ["GAP_CONVENTION", "dimension_table", "gap_cell", "meaning", "terms_table"]


def gap_cell(target: float, measured: float) -> str:
    """``target - measured`` signed, coloured by size (green within 0.05, yellow within 0.1, else red)."""
    gap = target - measured
    colour = "green" if abs(gap) <= 0.05 else "yellow" if abs(gap) <= 0.1 else "red"
    return f"[{colour}]{gap:+.3f}[/{colour}]"


def meaning(dimension: str) -> str:
    """A dimension's definition in one sentence."""
    return HRV_DESCRIPTIONS[dimension]


def dimension_table(*columns: str, title: str | None = None) -> Table:
    """A table of the 8 dimensions: ``dimension``, ``columns``, then what each dimension measures."""
    table = Table("dimension", *columns, "what it measures", title=title)
    table.columns[-1].overflow = "fold"
    return table


def terms_table(values: dict[str, float | None], title: str | None = None) -> Table:
    """The writing reward's terms, each with its value and its meaning in one sentence."""
    table = Table("term", "score", "what it means", title=title)
    for name, plain in REWARD_TERM_MEANINGS.items():
        value = values.get(name)
        table.add_row(name, "-" if value is None else f"{value:.3f}", plain)
    return table
