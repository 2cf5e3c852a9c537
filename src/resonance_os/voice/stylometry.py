"""Who wrote this? A stylometric classifier over the writers' corpora, independent of our HRV.

Character n-grams (2-4, within word boundaries, sublinear TF-IDF) and multinomial logistic regression
(scikit-learn), the standard strong baseline of authorship attribution: it reads spelling, function
words, punctuation habits and morphology, none of which the HRV measures. Typography that differs
between editions rather than writers (curly or straight quotes, dash forms) is made uniform first.

    from resonance_os.voice.stylometry import attribute

    attribute("It was a dark and stormy night...")   # Attribution(writer="poe", probabilities={...})

``attribute`` uses :func:`default_classifier`, fitted on every shipped writer's TRAIN paragraphs at
first use (about 10 s on a quiet core, 30 s on a busy one) and kept for the process; :func:`fit_classifier` fits one on other
writers, splits or sizes.

A second family, word unigrams and bigrams (punctuation marks count as words; ``features="words"``), is
what training reads (:class:`WriterReward`, HR-GRPO's reward for "reads as this writer"), so that the
check, the character n-gram classifier, is not the model the adapter was trained to please. On the
held-out books' paragraphs the word model attributes 0.904 (the character model 0.889).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from resonance_os.core.errors import ValidationError
from resonance_os.voice.corpora import WRITERS, Split, load_writer

NGRAMS = (2, 4)
MAX_FEATURES = 50_000
C = 10.0
"""Inverse regularisation of the logistic regression. Compared on the held-out books' paragraphs:
C 1 / 10 / 30 gave 0.885 / 0.889 / 0.886 with 2-4-grams and 50k features; 1-4-grams and 100k features
0.886 / 0.888 / 0.887 at twice the fitting time; 2-5-grams and 200k features 0.895 at 5x the time."""

Features = Literal["characters", "words"]
WORD_NGRAMS = (1, 2)
_WORD_TOKEN = r"[A-Za-z']+|[^\sA-Za-z']"
"""A word (letters and apostrophes) or one punctuation mark: a writer's semicolons and dashes are words."""

_TYPOGRAPHY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-"})
_DASHES = re.compile(r"\s*(?:\u2014|--+)\s*")


def normalise_typography(text: str) -> str:
    """Straight quotes and one dash form, so that an edition's typesetting does not name its writer."""
    return _DASHES.sub(" - ", text.translate(_TYPOGRAPHY))


@dataclass(frozen=True)
class Attribution:
    """The most likely writer of a text and every writer's probability (they sum to 1)."""

    writer: str
    probabilities: dict[str, float]


class StylometricClassifier:
    """Character n-gram (or word n-gram) TF-IDF + logistic regression over a fixed set of writers."""

    def __init__(
        self, paragraphs: Sequence[str], writers: Sequence[str], features: Features = "characters"
    ) -> None:
        """Fit on ``paragraphs`` labelled by ``writers`` (same length, at least two distinct writers).
        ``features``: character 2-4-grams within words (the check) or word 1-2-grams (training's)."""
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        if len(paragraphs) != len(writers):
            raise ValidationError(f"{len(paragraphs)} paragraphs but {len(writers)} labels")
        if len(set(writers)) < 2:
            raise ValidationError("a classifier needs paragraphs of at least two writers")
        if features not in ("characters", "words"):
            raise ValidationError(f"features must be 'characters' or 'words', got {features!r}")
        grams = {"analyzer": "char_wb", "ngram_range": NGRAMS}
        if features == "words":
            grams = {"analyzer": "word", "ngram_range": WORD_NGRAMS, "token_pattern": _WORD_TOKEN}
        self._pipeline = make_pipeline(
            TfidfVectorizer(
                **grams,
                sublinear_tf=True,
                min_df=2,
                max_features=MAX_FEATURES,
                preprocessor=lambda t: normalise_typography(t).lower(),
            ),
            LogisticRegression(C=C, max_iter=2000),
        )
        self._pipeline.fit(list(paragraphs), list(writers))
        self.writers: tuple[str, ...] = tuple(str(c) for c in self._pipeline.classes_)

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """Each text's probability per writer."""
        rows = self._pipeline.predict_proba([_checked(t) for t in texts])
        return [dict(zip(self.writers, map(float, row), strict=True)) for row in rows]

    def attribute_many(self, texts: Sequence[str]) -> list[Attribution]:
        """The most likely writer of each text, with the probabilities."""
        return [Attribution(max(p, key=p.__getitem__), p) for p in self.probabilities(texts)]

    def attribute(self, text: str) -> Attribution:
        """The most likely writer of ``text``, with the probabilities."""
        return self.attribute_many([text])[0]


def _checked(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("attribution needs a non-empty text")
    return text


def fit_classifier(
    writers: Sequence[str] = WRITERS,
    split: Split = "train",
    per_writer: int | None = None,
    features: Features = "characters",
) -> StylometricClassifier:
    """A classifier fitted on ``split`` paragraphs of ``writers`` (the first ``per_writer`` of each,
    all when None), reading ``features``."""
    texts: list[str] = []
    labels: list[str] = []
    for name in writers:
        paragraphs = load_writer(name, split)[:per_writer]
        texts.extend(paragraphs)
        labels.extend([name] * len(paragraphs))
    return StylometricClassifier(texts, labels, features)


@cache
def default_classifier() -> StylometricClassifier:
    """The classifier fitted on all shipped writers' train paragraphs (fitted once per process)."""
    return fit_classifier()


def attribute(text: str) -> Attribution:
    """The shipped writer whose style ``text`` is closest to, by the stylometric classifier."""
    return default_classifier().attribute(text)


class WriterReward:
    """HR-GRPO's feedback reward for writing as ``writer``: the probability ``classifier`` gives that
    ``writer`` wrote a text (``predict(text, target_hrv) -> [0, 1]``, the reward-model seam of
    ``evolution.hr_grpo.train_hr_grpo``; the target is not read).

    Default classifier: word n-grams on the shipped writers' train paragraphs, a different family from
    the character n-gram check that ``bench_voice.py`` attributes with."""

    def __init__(self, writer: str, classifier: StylometricClassifier | None = None) -> None:
        self.classifier = classifier if classifier is not None else fit_classifier(features="words")
        if writer not in self.classifier.writers:
            raise ValidationError(
                f"the classifier knows {', '.join(self.classifier.writers)}, not {writer!r}"
            )
        self.writer = writer

    def predict(self, text: str, target_hrv: Sequence[float] | None = None) -> float:
        """The probability that :attr:`writer` wrote ``text``."""
        return self.classifier.probabilities([text])[0][self.writer]
