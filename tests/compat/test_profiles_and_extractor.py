"""The original README's and profile systems guide's calls, rewritten: top-level names, the extractor's
old path, Article as a str, HRVProfileManager's names and errors, and original profile folders."""

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import resonance_os
from resonance_os.cli.hr_main import app

runner = CliRunner()
PROFESSIONAL = [0.7, 0.6, 0.8, 0.5, 0.4, 0.3, 0.6, 0.7]


def test_top_level_names_and_the_readme_programmatic_snippet():
    from resonance_os import (
        HRV_DIMENSIONS,
        HRVExtractor,
        HRVProfile,
        HRVProfileManager,
        HRVVector,
        HumanResonantWriter,
    )
    from resonance_os.profiles.hrv_extractor import HRVExtractor as OldPathExtractor

    assert set(resonance_os.__all__) == {
        "HRV_DIMENSIONS",
        "HRVExtractor",
        "HRVProfile",
        "HRVProfileManager",
        "HRVVector",
        "HumanResonantWriter",
    }
    from resonance_os.profiles import HRVExtractor as ProfilesExtractor
    from resonance_os.profiles import HRVProfileManager as ProfilesManager

    assert OldPathExtractor is HRVExtractor is ProfilesExtractor and ProfilesManager is HRVProfileManager
    assert len(HRV_DIMENSIONS) == 8
    assert HRVVector(PROFESSIONAL).to_list() == PROFESSIONAL
    assert HRVProfile(name="p", vector=PROFESSIONAL).vector.to_list() == PROFESSIONAL
    assert HRVProfileManager.__module__ == "resonance_os.profiles.multi_tenant_hr_profiles"

    article = HumanResonantWriter().generate("The impact of climate change", seed=3)
    hrv_vector = OldPathExtractor().extract(article)
    assert hrv_vector == HRVExtractor().extract(article.text)
    assert hrv_vector == article.measured_hrv["article"]


def test_article_behaves_like_the_string_it_prints():
    from resonance_os import HumanResonantWriter

    article = HumanResonantWriter().generate("city cycling", seed=1)
    text = article.text
    assert isinstance(article, str) and str(article) == text and article == text
    assert len(article) == len(text) and article.split() == text.split()
    assert article + "!" == text + "!" and "> " + article == "> " + text
    assert "cycling" in article.lower()
    assert json.loads(json.dumps({"article": article})) == {"article": text}
    assert article.resonance == pytest.approx(article.resonance)  # still the measured Article


def test_manager_guide_calls_list_names_base_dir_and_missing_profile(tmp_path):
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

    with HRVProfileManager(base_dir=tmp_path / "hr_profiles") as manager:
        manager.save_profile("default", "professional", PROFESSIONAL)
        manager.save_profile("company_a", "corporate", [0.5, 0.6, 0.7, 0.8, 0.4, 0.3, 0.5, 0.7])
        manager.save_profile("company_a", "marketing", [0.7, 0.8, 0.6, 0.5, 0.6, 0.4, 0.7, 0.6])
        assert manager.load_profile("default", "professional") == PROFESSIONAL
        assert manager.list_profiles("company_a") == ["corporate", "marketing"]
        assert [p.name for p in manager.get_profiles("company_a")] == ["corporate", "marketing"]
        with pytest.raises(FileNotFoundError, match="existing profiles: corporate, marketing"):
            manager.load_profile("company_a", "missing")
    with pytest.raises(ValueError, match="not both"):
        HRVProfileManager(tmp_path / "a", base_dir=tmp_path / "b")


def write_original_folder(root: Path) -> dict[Path, bytes]:
    """An original profile folder: the save_profile format, the shipped format, and two bad files."""
    files = {
        root / "default" / "professional.json": json.dumps(PROFESSIONAL).encode(),
        root / "company_a" / "brand_voice.json": b"[0.3, 0.6, 0.5, 0.7, 0.4, 0.2, 0.5, 0.8]",
        root / "default" / "tech_startup.json": json.dumps(
            {
                "name": "tech_startup",
                "description": "Tech voice",
                "target_hrv": [0.5, 0.4, 0.5, 0.8, 0.6, 0.4, 0.5, 0.9],
            }
        ).encode(),
        root / "company_a" / "old_extractor.json": b"[1.7, -0.2, 0.2, 0.5, 0.5, 0.1, 0.2, 0.7]",
        root / "company_a" / "notes.json": b'{"owner": "marketing"}',
        root / "config.json": b'{"profile_system": {}}',
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*.json"))
    }


def test_profiles_import_reads_an_original_folder_and_changes_no_file(tmp_path):
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

    folder = tmp_path / "hr_profiles"
    write_original_folder(folder)
    before = snapshot(folder)
    store = str(tmp_path / "store")

    result = runner.invoke(app, ["profiles", "import", str(folder), "--store", store, "--json"])
    assert result.exit_code == 1  # two files are not profiles; the valid ones are imported
    report = json.loads(result.stdout)
    assert report["imported"] == ["company_a/brand_voice", "default/professional", "default/tech_startup"]
    rejected = {Path(r["file"]).name: r["reason"] for r in report["rejected"]}
    assert set(rejected) == {"old_extractor.json", "notes.json"}
    assert "sentence_variance = 1.7 is outside [0, 1]" in rejected["old_extractor.json"]
    assert "target_hrv" in rejected["notes.json"]
    with HRVProfileManager(store) as manager:
        assert manager.load_profile("default", "professional") == PROFESSIONAL
        assert manager.get_profile("default", "tech_startup").description.startswith("Tech voice")

    again = runner.invoke(app, ["profiles", "import", str(folder), "--store", store, "--json"])
    assert json.loads(again.stdout)["imported"] == []  # already stored: kept, not re-versioned
    with HRVProfileManager(store) as manager:
        assert manager.get_profile("default", "professional").version == 1
        manager.save_profile("default", "professional", [0.5] * 8)  # version 2, edited in the store

    replaced = runner.invoke(
        app, ["profiles", "import", str(folder), "--store", store, "--replace", "--json"]
    )
    assert json.loads(replaced.stdout)["imported"] == ["default/professional"]  # only the one that differs
    with HRVProfileManager(store) as manager:
        assert manager.get_profile("default", "professional").version == 3
        assert manager.load_profile("default", "professional") == PROFESSIONAL
    assert snapshot(folder) == before

    missing = runner.invoke(app, ["profiles", "import", str(tmp_path / "nope"), "--store", store])
    assert missing.exit_code == 2 and "is not a folder" in missing.output


def test_a_manager_opened_on_an_original_folder_reads_it(tmp_path, monkeypatch):
    from resonance_os import HRVProfileManager

    folder = tmp_path / "profiles" / "hr_profiles"
    write_original_folder(folder)
    before = snapshot(folder)
    with HRVProfileManager(
        folder
    ) as manager:  # the original's HRVProfileManager(Path("./profiles/hr_profiles"))
        assert manager.list_profiles("default") == ["professional", "tech_startup"]
        assert manager.load_profile("company_a", "brand_voice") == [0.3, 0.6, 0.5, 0.7, 0.4, 0.2, 0.5, 0.8]
        assert len(manager.folder_import.rejected) == 2
        manager.save_profile("default", "professional", [0.5] * 8)  # a newer version wins over the file
    with HRVProfileManager(folder) as manager:
        assert manager.load_profile("default", "professional") == [0.5] * 8
        assert manager.folder_import.existing
    assert snapshot(folder) == before

    monkeypatch.delenv("RESONANCE_STORE", raising=False)
    monkeypatch.setenv("HRV_TENANT_DIR", str(folder))
    with HRVProfileManager() as manager:  # the original's HRV_TENANT_DIR names the store
        assert manager.list_profiles("company_a") == ["brand_voice"]
