"""The built-in backend's phrase bank (package data ``generation/data/phrase_bank.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

Verb = tuple[str, str, str, str]
"""A verb's forms: (base, third-person singular present, past, past participle)."""

NounPhrase = tuple[str, bool]
"""A noun phrase and whether it is plural (for is/are agreement)."""


@dataclass(frozen=True)
class PhraseBank:
    """Every word list and template the built-in composer draws from, grouped by the HRV handle it moves."""

    verbs: dict[str, tuple[Verb, ...]]
    objects: tuple[NounPhrase, ...]
    agents: tuple[NounPhrase, ...]
    characters: tuple[str, ...]
    character_roles: tuple[str, ...]
    time_markers: tuple[str, ...]
    narrative_frames: tuple[str, ...]
    hedges: dict[str, tuple[str, ...]]
    boosters: dict[str, tuple[str, ...]]
    similes: tuple[str, ...]
    adjuncts: tuple[str, ...]
    subordinates: dict[str, tuple[str, ...]]
    evaluative_openers: dict[str, tuple[str, ...]]
    adjectives: dict[str, tuple[str, ...]]
    intensifiers: tuple[str, ...]
    evaluations: dict[str, tuple[str, ...]]
    short: dict[str, tuple[str, ...]]
    questions: dict[str, tuple[str, ...]]
    curious_questions: dict[str, tuple[str, ...]]
    passive_questions: tuple[str, ...]
    curiosity_tags: tuple[str, ...]
    topic_frames: tuple[str, ...]
    pronouns: tuple[NounPhrase, ...]
    dialogue: dict[str, tuple[str, ...]]
    pronoun_objects: dict[str, str]
    narrator_openers: tuple[str, ...]

    def verb_forms(self) -> dict[str, tuple[Verb, str]]:
        """Map every inflected verb form to its verb and tone (``neutral``/``positive``/``negative``)."""
        forms: dict[str, tuple[Verb, str]] = {}
        for tone, verbs in self.verbs.items():
            for verb in verbs:
                for form in verb:
                    forms.setdefault(form, (verb, tone))
        return forms


def _tuples(mapping: dict[str, list]) -> dict[str, tuple]:
    return {
        key: tuple(tuple(v) if isinstance(v, list) else v for v in values) for key, values in mapping.items()
    }


def _field_value(name: str, kind: str, raw: dict) -> object:
    """Field ``name`` of the bank from the JSON, converted by its declared type ``kind``."""
    if name == "subordinates":
        return {"present": tuple(raw["subordinates"]), "past": tuple(raw["subordinates_past"])}
    value = raw[name]
    if kind == "tuple[NounPhrase, ...]":
        return tuple((phrase, bool(plural)) for phrase, plural in value)
    if kind == "dict[str, str]":
        return dict(value)
    if kind.startswith("dict["):
        return _tuples(value)
    return tuple(value)


@cache
def load_phrase_bank() -> PhraseBank:
    """Load (once per process) and return the phrase bank shipped with the package."""
    raw = json.loads(
        resources.files("resonance_os.generation").joinpath("data/phrase_bank.json").read_text("utf-8")
    )
    return PhraseBank(**{f.name: _field_value(f.name, f.type, raw) for f in fields(PhraseBank)})
