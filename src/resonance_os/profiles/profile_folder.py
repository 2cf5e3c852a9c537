"""Profile folders of the original ResonanceOS, read into the profile store.

The original kept one JSON file per profile, ``<folder>/<tenant>/<name>.json``, holding a list of 8
floats (its ``HRVProfileManager.save_profile``), or, for the profiles it shipped, an object with
``target_hrv`` (8 floats) and an optional ``description``. :func:`import_profile_folder` saves each
valid file as ``tenant/name`` in a store and never writes, moves or deletes a file in the folder.
``resonance profiles import DIR`` runs it, and :class:`HRVProfileManager` runs it when it is opened on
such a folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from resonance_os.core.errors import AlreadyExistsError, ValidationError
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.profiles.names import validate_name

if TYPE_CHECKING:
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

MAX_FILE_BYTES = 65_536
"""A profile file is a few hundred bytes; larger JSON files in the folder are not profiles."""


@dataclass(frozen=True)
class FolderProfile:
    """One readable profile file: ``tenant/name``, its 8 floats and where it came from."""

    tenant: str
    name: str
    vector: list[float]
    description: str | None
    path: Path

    @property
    def key(self) -> str:
        return f"{self.tenant}/{self.name}"


@dataclass
class FolderImport:
    """What an import did: keys saved, keys already in the store (left as they are), files refused."""

    imported: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    """``(file path, reason)`` for each JSON file that is not a valid profile."""


def profile_files(folder: Path) -> list[Path]:
    """The ``<tenant>/<name>.json`` files directly under ``folder``'s sub-folders, sorted (hidden skipped)."""
    if not folder.is_dir():
        return []
    return sorted(
        path
        for tenant_dir in folder.iterdir()
        if tenant_dir.is_dir() and not tenant_dir.name.startswith(".")
        for path in tenant_dir.glob("*.json")
        if path.is_file() and not path.name.startswith(".")
    )


def read_profile_file(path: Path) -> FolderProfile:
    """Parse one profile file; ``ValidationError`` names what is wrong with it."""
    tenant = validate_name(path.parent.name, "tenant")
    name = validate_name(path.stem, "profile")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValidationError(f"{path.stat().st_size} bytes is too large for a profile file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"not valid JSON ({exc})") from None
    description = None
    if isinstance(data, dict):
        if "target_hrv" not in data:
            raise ValidationError("a JSON object without 'target_hrv'; a profile is a list of 8 floats")
        description = data.get("description") if isinstance(data.get("description"), str) else None
        data = data["target_hrv"]
    if not isinstance(data, list):
        raise ValidationError(f"holds a JSON {type(data).__name__}; a profile is a list of 8 floats")
    return FolderProfile(tenant, name, validate_hrv(data, what="the profile"), description, path)


def import_profile_folder(
    manager: HRVProfileManager, folder: str | os.PathLike[str], *, replace: bool = False
) -> FolderImport:
    """Save every valid ``<tenant>/<name>.json`` under ``folder`` into ``manager``'s store.

    A profile already in the store is left as it is (listed in ``existing``) unless ``replace``, which
    saves the file's vector as its next version when it differs. Files are only read.
    """
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValidationError(
            f"{str(root)!r} is not a folder; pass the folder that holds <tenant>/<name>.json"
        )
    report = FolderImport()
    stored: dict[str, dict[str, list[float]]] = {}  # tenant -> name -> current vector, read once per tenant
    for path in profile_files(root):
        try:
            profile = read_profile_file(path)
        except (ValidationError, OSError) as exc:
            report.rejected.append((str(path), str(exc)))
            continue
        if profile.tenant not in stored:
            stored[profile.tenant] = {
                p.name: p.vector.to_list() for p in manager.get_profiles(profile.tenant)
            }
        current = stored[profile.tenant].get(profile.name)
        if current is not None and (not replace or current == profile.vector):
            report.existing.append(profile.key)
            continue
        try:
            manager.save_profile(
                profile.tenant,
                profile.name,
                profile.vector,
                _description(profile),
                must_exist=None if replace else False,
            )
        except AlreadyExistsError:  # another process created it since it was read
            report.existing.append(profile.key)
            continue
        except ValidationError as exc:
            report.rejected.append((str(path), str(exc)))
            continue
        report.imported.append(profile.key)
    return report


def _description(profile: FolderProfile) -> str:
    origin = f"Imported from {profile.tenant}/{profile.path.name} (original ResonanceOS profile folder)."
    return f"{profile.description} {origin}" if profile.description else origin
