"""``resonance profiles ...``: list, show, create, measure (one text or a writer's corpus), delete, trace and
import tenants' target profiles."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from resonance_os.cli.errors import error_console, run_reporting_user_errors
from resonance_os.cli.hrv_option import StoreOpt, parse_hrv_option
from resonance_os.cli.profile_adapter import (
    AdapterModelOpt,
    AdapterOpt,
    AdapterStepsOpt,
    check_adapter_text,
    train_profile_adapter,
)
from resonance_os.cli.text_input import read_source
from resonance_os.core.errors import AlreadyExistsError, ValidationError
from resonance_os.core.hrv_constants import HRV_DIMENSIONS
from resonance_os.evolution.voice_adapters import split_paragraphs
from resonance_os.profiles.sample import sample_warning
from resonance_os.profiles.templates import BUILTIN_TEMPLATES, DEFAULT_PROFILE_NAME

if TYPE_CHECKING:
    from resonance_os.core.hrv_types import HRVProfile
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
    from resonance_os.profiles.profile_folder import FolderImport

app = typer.Typer(
    help="Tenants' target HRV profiles, versioned, in the data home's database (the one `resonance serve`"
    " uses) or any SQL database.",
    no_args_is_help=True,
)
console = Console(highlight=False)

TenantArg = typer.Argument(..., help="Tenant name: letters, digits, '-', '_', '.'.")
NameArg = typer.Argument(..., help="Profile name: letters, digits, '-', '_', '.'.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of a table.")
OverwriteOpt = typer.Option(
    False,
    "--overwrite",
    help="Replace a profile of the same name: its values become a new version (the old ones stay in"
    " its history).",
)
BAR_WIDTH = 20


def _bar(value: float) -> str:
    filled = round(value * BAR_WIDTH)
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def _print_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _print_profile(profile: HRVProfile, as_json: bool = False) -> None:
    """The profile as JSON (``--json``), else as a table of its values with bars."""
    if as_json:
        _print_json(profile.to_dict())
        return
    title = f"{profile.key}  v{profile.version}"
    if profile.updated_at is not None:
        title += f"  (saved {profile.updated_at:%Y-%m-%d %H:%M:%S} UTC)"
    table = Table("dimension", "value", "", title=title, caption=profile.description)
    for name, value in profile.vector.to_dict().items():
        table.add_row(name, f"{value:.3f}", _bar(value))
    console.print(table)


def _changes(before: HRVProfile, after: HRVProfile) -> str:
    """``"emotional_valence +0.10, storytelling_index -0.20"``: the dimensions that moved."""
    moved = [
        f"{name} {after.vector[name] - before.vector[name]:+.2f}"
        for name in HRV_DIMENSIONS
        if abs(after.vector[name] - before.vector[name]) >= 0.005
    ]
    return ", ".join(moved) or "values unchanged"


@contextmanager
def _refusing_overwrite(
    manager: HRVProfileManager, tenant: str, name: str, overwrite: bool
) -> Iterator[bool | None]:
    """``must_exist`` for the save (None with --overwrite: create or add a version; False: create
    only); a clash becomes an error naming the existing profile and --overwrite."""
    try:
        yield None if overwrite else False
    except AlreadyExistsError:
        existing = manager.get_profile(tenant, name)
        raise AlreadyExistsError(
            f"profile {existing.key} already exists (version {existing.version}, saved "
            f"{existing.updated_at:%Y-%m-%d %H:%M} UTC); pass --overwrite to save this as version "
            f"{existing.version + 1} (earlier versions stay in `resonance profiles history {tenant} {name}`), "
            "or choose another name"
        ) from None


def _open(store: str | None) -> HRVProfileManager:
    """The profile database (imported here: the database layer loads only for commands that use it)."""
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

    return HRVProfileManager(store)


def _save_measured(
    tenant: str,
    name: str,
    overwrite: bool,
    store: str | None,
    paragraphs: list[str],
    save: Callable[[HRVProfileManager, bool | None], HRVProfile],
    report: Callable[[], None],
    adapter_options: tuple[bool, int, str | None],
) -> HRVProfile:
    """Save a profile measured from a writer's text (``save``) under the overwrite rule, ``report`` on
    it, and with ``--adapter`` train its voice adapter on ``paragraphs`` (refused before saving when
    they cannot train one)."""
    adapter, steps, model = adapter_options
    if adapter:
        check_adapter_text(paragraphs)
    with _open(store) as manager, _refusing_overwrite(manager, tenant, name, overwrite) as must_exist:
        profile = save(manager, must_exist)
    report()
    if adapter:
        train_profile_adapter(
            profile.key, profile.vector.to_list(), paragraphs, store, grpo_steps=steps, base=model
        )
    return profile


@app.command("list")
def list_profiles(
    tenant: str = typer.Argument(None, help="Tenant to list; omit to list every tenant.", show_default=False),
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List a tenant's profiles (or, without TENANT, every tenant and its profile count)."""

    def run() -> None:
        with _open(store) as manager:
            if tenant is None:
                tenants = manager.list_tenants()
                if as_json:
                    _print_json(tenants)
                    return
                table = Table("tenant", "profiles")
                for name, count in tenants.items():
                    table.add_row(name, str(count))
                console.print(table if tenants else "no profiles stored yet")
                return
            profiles = manager.get_profiles(tenant)
            if as_json:
                _print_json([p.to_dict() for p in profiles])
                return
            if not profiles:
                console.print(f"tenant {tenant!r} has no profiles")
                return
            table = Table("profile", "version", "updated (UTC)", "description", title=f"Profiles of {tenant}")
            for p in profiles:
                table.add_row(p.name, str(p.version), f"{p.updated_at:%Y-%m-%d %H:%M}", p.description or "")
            console.print(table)

    run_reporting_user_errors(run)


@app.command("show")
def show(
    tenant: str = TenantArg, name: str = NameArg, store: str = StoreOpt, as_json: bool = JsonOpt
) -> None:
    """Show a profile's current HRV with bars, its version and description."""

    def run() -> None:
        with _open(store) as manager:
            profile = manager.get_profile(tenant, name)
        _print_profile(profile, as_json)

    run_reporting_user_errors(run)


@app.command("create")
def create(
    tenant: str = TenantArg,
    name: str = NameArg,
    hrv: str = typer.Option(None, "--hrv", help="8 comma-separated values in [0, 1], in HRV order."),
    template: str = typer.Option(
        None, "--template", help=f"Copy a built-in template: {', '.join(BUILTIN_TEMPLATES)}."
    ),
    description: str = typer.Option(None, "--description", "-d", help="What the profile is for."),
    overwrite: bool = OverwriteOpt,
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Create a profile from --hrv or --template (an existing name needs --overwrite)."""

    def run() -> None:
        if (hrv is None) == (template is None):
            raise ValidationError("give exactly one of --hrv or --template")
        with _open(store) as manager, _refusing_overwrite(manager, tenant, name, overwrite) as must_exist:
            if template is not None:
                profile = manager.create_from_template(
                    tenant, name, template, description, must_exist=must_exist
                )
            else:
                profile = manager.save_profile(
                    tenant, name, parse_hrv_option(hrv), description, must_exist=must_exist
                )
        _print_profile(profile, as_json)

    run_reporting_user_errors(run)


@app.command("from-text")
def from_text(
    tenant: str = TenantArg,
    name: str = NameArg,
    source: str = typer.Argument(..., metavar="FILE|-", help="UTF-8 text file to measure, or '-' for stdin."),
    description: str = typer.Option(None, "--description", "-d", help="What the profile is for."),
    overwrite: bool = OverwriteOpt,
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    adapter: bool = AdapterOpt,
    adapter_steps: int = AdapterStepsOpt,
    adapter_model: str = AdapterModelOpt,
) -> None:
    """Measure a sample text's HRV and save it as the profile (an existing name needs --overwrite).

    A sample under 150 words is saved with a warning: too few sentences to measure a voice. With
    --adapter a voice adapter is trained on the sample's paragraphs (blank-line separated) and stored
    with the profile."""

    def run() -> None:
        text = read_source(source)

        def save(manager: HRVProfileManager, must_exist: bool | None) -> HRVProfile:
            return manager.profile_from_text(tenant, name, text, description, must_exist=must_exist)

        def warn() -> None:
            warning = sample_warning(text)
            if warning is not None:
                error_console.print(f"[yellow]warning:[/yellow] {escape(warning)}")

        adapter_options = (adapter, adapter_steps, adapter_model)
        profile = _save_measured(
            tenant, name, overwrite, store, split_paragraphs(text), save, warn, adapter_options
        )
        _print_profile(profile, as_json)

    run_reporting_user_errors(run)


@app.command("from-corpus")
def from_corpus(
    tenant: str = TenantArg,
    folder: Path = typer.Argument(
        ...,
        metavar="DIR",
        help="Folder of the writer's UTF-8 .txt files (subfolders too).",
        show_default=False,
    ),
    name: str = typer.Option(..., "--name", "-n", help="Profile name: letters, digits, '-', '_', '.'."),
    description: str = typer.Option(None, "--description", "-d", help="What the profile is for."),
    overwrite: bool = OverwriteOpt,
    store: str = StoreOpt,
    as_json: bool = JsonOpt,
    adapter: bool = AdapterOpt,
    adapter_steps: int = AdapterStepsOpt,
    adapter_model: str = AdapterModelOpt,
) -> None:
    """Measure a writer's whole corpus (every .txt file in DIR) and save it as the profile.

    Needs at least 1,000 words; an existing name needs --overwrite. With --adapter a voice adapter is
    trained on the corpus's paragraphs and stored with the profile (the writer then drafts with it)."""
    from resonance_os.voice.corpus_folder import profile_from_corpus, read_corpus_folder

    def run() -> HRVProfile:
        corpus = read_corpus_folder(folder)

        def save(manager: HRVProfileManager, must_exist: bool | None) -> HRVProfile:
            return profile_from_corpus(manager, tenant, name, corpus, description, must_exist=must_exist)

        def report() -> None:
            files = f"{len(corpus.files)} file{'s' if len(corpus.files) != 1 else ''}"
            error_console.print(f"measured {files}, {corpus.words:,} words", markup=False)

        adapter_options = (adapter, adapter_steps, adapter_model)
        return _save_measured(
            tenant, name, overwrite, store, corpus.paragraphs, save, report, adapter_options
        )

    profile = run_reporting_user_errors(run)
    _print_profile(profile, as_json)


@app.command("delete")
def delete(
    tenant: str = TenantArg,
    name: str = NameArg,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    store: str = StoreOpt,
) -> None:
    """Delete a profile and its whole version history."""

    def run() -> None:
        with _open(store) as manager:
            profile = manager.get_profile(tenant, name)
            if not yes and not typer.confirm(
                f"Delete {profile.key} and its {profile.version} version(s)?", default=False
            ):
                console.print("not deleted")
                raise typer.Exit(code=1)
            manager.delete_profile(tenant, name)
        console.print(f"deleted {profile.key}")

    run_reporting_user_errors(run)


@app.command("history")
def history(
    tenant: str = TenantArg, name: str = NameArg, store: str = StoreOpt, as_json: bool = JsonOpt
) -> None:
    """Every saved version of a profile, oldest first."""

    def run() -> None:
        with _open(store) as manager:
            versions = manager.profile_history(tenant, name)
        if as_json:
            _print_json([v.to_dict() for v in versions])
            return
        table = Table("version", "saved (UTC)", "change from previous version", "description")
        table.title = f"History of {tenant}/{name} (values: show / --json)"
        previous = None
        for v in versions:
            table.add_row(
                str(v.version),
                f"{v.updated_at:%Y-%m-%d %H:%M:%S}",
                "created" if previous is None else _changes(previous, v),
                v.description or "",
            )
            previous = v
        console.print(table)

    run_reporting_user_errors(run)


@app.command("import")
def import_folder(
    folder: Path = typer.Argument(
        ..., help="An original ResonanceOS profile folder: <tenant>/<name>.json files.", show_default=False
    ),
    store: str = StoreOpt,
    replace: bool = typer.Option(
        False, "--replace", help="Save a file's vector as a new version of a profile already stored."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Read an original ResonanceOS profile folder into the store (the files are only read).

    Each <tenant>/<name>.json holding 8 floats (or an object with target_hrv) becomes profile
    tenant/name. Exits 1 when some file was not a valid profile (the others are imported).
    """

    def run() -> FolderImport:
        from resonance_os.profiles.profile_folder import import_profile_folder

        with _open(store) as manager:
            return import_profile_folder(manager, folder, replace=replace)

    report = run_reporting_user_errors(run)
    if as_json:
        _print_json(
            {
                "imported": report.imported,
                "existing": report.existing,
                "rejected": [{"file": f, "reason": r} for f, r in report.rejected],
            }
        )
    else:
        for key in report.imported:
            console.print(f"imported {key}")
        for key in report.existing:
            console.print(f"kept {key} (already stored; --replace saves the file's values as a new version)")
        for file, reason in report.rejected:
            error_console.print(f"not imported: {file}: {reason}", markup=False)
        console.print(
            f"{len(report.imported)} imported, {len(report.existing)} already stored, "
            f"{len(report.rejected)} not valid profiles"
        )
    if report.rejected:
        raise typer.Exit(code=1)


@app.command("templates")
def templates(as_json: bool = JsonOpt) -> None:
    """The built-in templates (copy one with `create TENANT NAME --template NAME`)."""
    if as_json:
        _print_json({name: t.to_dict() for name, t in BUILTIN_TEMPLATES.items()})
        return
    table = Table(
        "dimension", *BUILTIN_TEMPLATES, title=f"Built-in templates (default: {DEFAULT_PROFILE_NAME})"
    )
    for dim in HRV_DIMENSIONS:
        table.add_row(dim, *(f"{t.vector[dim]:.2f}" for t in BUILTIN_TEMPLATES.values()))
    console.print(table)
    for name, t in BUILTIN_TEMPLATES.items():
        console.print(f"[bold]{name}[/bold]: {t.description}")
