"""The sentence cues the coherence features read: discourse markers, persons and opening classes.

Shared by the linear order model (``quality.coherence``) and the transition model
(``quality.transitions``), which reads them as one-hot features in a fixed order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from resonance_os.quality.coherence import Unit

MARKER_WORDS = frozenset(
    "also again too another other further finally following follows then however thus therefore "
    "hence so but this these it its they them their such same above below see".split()
)
PERSONS = {
    **dict.fromkeys(("he", "him", "his", "himself"), "he"),
    **dict.fromkeys(("she", "her", "hers", "herself"), "she"),
    **dict.fromkeys(("they", "them", "their", "theirs", "themselves"), "they"),
    **dict.fromkeys(("i", "me", "my", "mine", "myself"), "i"),
    **dict.fromkeys(("we", "us", "our", "ours", "ourselves"), "we"),
    **dict.fromkeys(("you", "your", "yours", "yourself"), "you"),
    **dict.fromkeys(("it", "its", "itself"), "it"),
}
OPENING_CLASS = {
    word: name
    for name, words in {
        "P": "he she it they him her them his its their",  # pronoun
        "D": "this these that those such",  # demonstrative
        "C": "however but yet although though nevertheless instead otherwise still",  # contrast
        "A": "also and moreover furthermore besides likewise similarly",  # addition
        "R": "so thus therefore hence consequently accordingly then",  # result
        "S": "first second third next finally lastly",  # sequence
    }.items()
    for word in words.split()
}
MARKERS = tuple(sorted(MARKER_WORDS))
"""The discourse markers a :class:`Unit` records, in a fixed order."""
PERSON_NAMES = tuple(dict.fromkeys(PERSONS.values()))
"""The persons a :class:`Unit` records (he, she, they, i, we, you, it)."""
OPENING_CLASSES = (*dict.fromkeys(OPENING_CLASS.values()), "o")
"""The values of :func:`opening_class`."""


def opening_class(u: Unit) -> str:
    """The class of the word ``u`` opens with (``OPENING_CLASS``; "o" for any other word)."""
    return OPENING_CLASS.get(u.first, "o")
