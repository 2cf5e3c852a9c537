import pytest

from resonance_os.core.errors import ValidationError
from resonance_os.generation.topics import MAX_PROMPT_CHARS, topic_phrases, validate_prompt


@pytest.mark.parametrize("prompt", ["", "   \n\t"])
def test_empty_prompt_is_rejected_with_a_fix(prompt):
    with pytest.raises(ValidationError, match="prompt is empty"):
        validate_prompt(prompt)


def test_long_prompt_is_rejected_naming_the_limit():
    with pytest.raises(ValidationError, match="4000-character limit"):
        validate_prompt("word " * (MAX_PROMPT_CHARS // 4))


def test_non_string_prompt():
    with pytest.raises(ValidationError, match="must be a string"):
        validate_prompt(42)


def test_topic_phrases_drop_instructions_markup_and_split_at_punctuation():
    assert topic_phrases("Write a blog post about remote work and team culture") == [
        "remote work",
        "team culture",
    ]
    assert topic_phrases("NASA budget cuts, public science funding") == [
        "NASA budget cuts",
        "public science funding",
    ]
    assert "café culture" in topic_phrases("<i>Café</i> culture — “tips”")
    assert topic_phrases("a") == ["a"]
