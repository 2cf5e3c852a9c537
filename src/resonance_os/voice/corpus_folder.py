"""A writer's profile from a folder of the writer's own texts (``resonance profiles from-corpus``).

:func:`read_corpus_folder` reads every ``.txt`` file in a folder and its subfolders (UTF-8, hidden
files skipped, in path order) and refuses, with the fix in the message, a missing folder, a file in
its place, no ``.txt`` files, non-UTF-8 text, under ``MIN_CORPUS_WORDS`` words or over
``MAX_CORPUS_CHARS`` characters. :func:`profile_from_corpus` saves the HRV of the whole corpus as a
profile, exactly as ``profiles from-text`` does for one sample.

The corpus keeps its paragraphs (``WriterCorpus.paragraphs``) for what is built after the profile: a
writer adapter trained on them (supervised fine-tuning, then HR-GRPO toward the profile) is the next
step of ``from-corpus --adapter``; it takes the saved profile and ``corpus.paragraphs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resonance_os.core.errors import ValidationError
from resonance_os.core.text import split_paragraphs

if TYPE_CHECKING:
    from resonance_os.core.hrv_types import HRVProfile
    from resonance_os.profiles.multi_tenant_hr_profiles import HRVProfileManager

MIN_CORPUS_WORDS = 1_000
"""Fewest words a corpus must hold: a voice measured on less rests on a few dozen sentences (one
sample of any length goes through ``profiles from-text``, with a warning under 150 words)."""
MAX_CORPUS_CHARS = 10_000_000
"""Most characters read (about 1.7 million words, a dozen novels; measured in about 20 s)."""


@dataclass(frozen=True)
class WriterCorpus:
    """The texts of a corpus folder: the files read and their paragraphs."""

    folder: Path
    files: tuple[Path, ...]
    paragraphs: tuple[str, ...]

    @property
    def words(self) -> int:
        return sum(len(p.split()) for p in self.paragraphs)

    @property
    def text(self) -> str:
        """The whole corpus, paragraphs separated by blank lines."""
        return "\n\n".join(self.paragraphs)


def _text_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.suffix.lower() == ".txt"
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def _read(path: Path, shown: str) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read {shown}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{shown} is not UTF-8 text (byte {exc.start}); convert it first, e.g. iconv -t UTF-8, "
            "or move it out of the folder"
        ) from None


def read_corpus_folder(folder: str | Path) -> WriterCorpus:
    """The ``.txt`` texts under ``folder``; ``ValidationError`` naming the problem and the fix."""
    folder = Path(folder)
    if not folder.exists():
        raise ValidationError(
            f"no such folder: {str(folder)!r}; give a folder holding the writer's .txt files"
        )
    if not folder.is_dir():
        raise ValidationError(
            f"{str(folder)!r} is a file, not a folder; give a folder of .txt files "
            "(for one sample text use `resonance profiles from-text`)"
        )
    files = _text_files(folder)
    if not files:
        raise ValidationError(
            f"{str(folder)!r} holds no .txt files; put the writer's texts there as UTF-8 .txt files"
        )
    paragraphs: list[str] = []
    chars = 0
    for path in files:
        text = _read(path, repr(str(path)))
        chars += len(text)
        if chars > MAX_CORPUS_CHARS:
            raise ValidationError(
                f"the .txt files in {str(folder)!r} hold over {MAX_CORPUS_CHARS:,} characters; "
                "a voice is measured well on far less: choose a few books or a sample of chapters"
            )
        paragraphs.extend(split_paragraphs(text))
    corpus = WriterCorpus(folder, tuple(files), tuple(paragraphs))
    if corpus.words < MIN_CORPUS_WORDS:
        raise ValidationError(
            f"the .txt files in {str(folder)!r} hold {corpus.words:,} words in all; a writer's corpus needs at least {MIN_CORPUS_WORDS:,}: add more of "
            "the writer's texts (for one short sample use `resonance profiles from-text`)"
        )
    return corpus


def profile_from_corpus(
    manager: HRVProfileManager,
    tenant: str,
    name: str,
    corpus: WriterCorpus,
    description: str | None = None,
    *,
    must_exist: bool | None = None,
) -> HRVProfile:
    """Measure the whole corpus and save it as ``tenant/name`` (``must_exist`` as in
    ``HRVProfileManager.save_profile``: None creates or adds a version, False only creates)."""
    if description is None:
        description = (
            f"Measured from {len(corpus.files)} .txt file{'s' if len(corpus.files) != 1 else ''} "
            f"({corpus.words:,} words) in {corpus.folder.name or corpus.folder}."
        )
    return manager.profile_from_text(tenant, name, corpus.text, description, must_exist=must_exist)
