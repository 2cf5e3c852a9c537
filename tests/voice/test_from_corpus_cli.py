"""``resonance profiles from-corpus TENANT DIR --name NAME``: a writer's profile from a folder of texts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from resonance_os.cli.hr_main import app
from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.voice.corpora import load_writer
from resonance_os.voice.corpus_folder import MIN_CORPUS_WORDS, read_corpus_folder

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["profiles", "from-corpus", *args])


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "twain"
    (folder / "more").mkdir(parents=True)
    paragraphs = load_writer("twain", "heldout")[:40]
    (folder / "one.txt").write_text("\n\n".join(paragraphs[:20]), encoding="utf-8")
    (folder / "more" / "two.txt").write_text("\n\n".join(paragraphs[20:]), encoding="utf-8")
    (folder / "notes.md").write_text("not read", encoding="utf-8")
    (folder / ".hidden.txt").write_text("not read either", encoding="utf-8")
    return folder, paragraphs


def test_saves_the_hrv_of_every_txt_file_and_refuses_to_overwrite(corpus, tmp_path) -> None:
    folder, paragraphs = corpus
    store = str(tmp_path / "store")
    made = invoke("acme", str(folder), "--name", "twain", "--store", store, "--json")
    assert made.exit_code == 0, made.output
    saved = json.loads(made.stdout)
    expected = HRVExtractor().extract("\n\n".join(paragraphs))
    assert list(saved["hrv"].values()) == pytest.approx(expected)
    assert "2 .txt files" in saved["description"]
    assert "measured 2 files" in made.stderr

    clash = invoke("acme", str(folder), "--name", "twain", "--store", store)
    assert clash.exit_code == 2 and "--overwrite" in clash.output
    again = invoke("acme", str(folder), "--name", "twain", "--store", store, "--overwrite", "-d", "Twain")
    assert again.exit_code == 0, again.output
    with HRVProfileManager(store) as manager:
        profile = manager.get_profile("acme", "twain")
    assert profile.version == 2 and profile.description == "Twain"


def test_reader_keeps_paragraphs_in_path_order(corpus) -> None:
    folder, paragraphs = corpus
    read = read_corpus_folder(folder)
    assert [p.relative_to(folder).as_posix() for p in read.files] == ["more/two.txt", "one.txt"]
    assert read.paragraphs == tuple(paragraphs[20:] + paragraphs[:20])
    assert read.words == sum(len(p.split()) for p in paragraphs)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "no such folder"),
        (lambda d: _file(d / "a.txt", "Some text."), "is a file, not a folder"),
        (lambda d: _file(d / "x" / "a.md", "text").parent, "holds no .txt files"),
        (lambda d: _file(d / "x" / "a.txt", "Too short a corpus.").parent, f"at least {MIN_CORPUS_WORDS:,}"),
        (lambda d: _bytes(d / "x" / "a.txt", b"caf\xe9 " * 2000).parent, "not UTF-8"),
    ],
)
def test_bad_folders_get_one_clear_error_and_save_nothing(tmp_path, make, message) -> None:
    store = str(tmp_path / "store")
    result = invoke("acme", str(make(tmp_path)), "--name", "w", "--store", store)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    with HRVProfileManager(store) as manager:
        assert manager.list_profiles("acme") == []


def _file(path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _bytes(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
