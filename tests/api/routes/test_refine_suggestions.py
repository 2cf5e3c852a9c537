"""POST /v1/refine gives each kept edit as a suggestion told in words, and POST /v1/refine/apply applies
the subset a writer accepted: all of them is the refined text, none the original, one of them only that
edit; an accepted edit of a sentence that a rejected edit wrote is skipped and said to be."""

from __future__ import annotations

import re

import pytest

DRAFT = (
    "We were delighted by the wonderful results. The report was written by the team last week. It is a "
    "very good plan and the numbers are clear. Perhaps the market will grow.\n\n"
    "The market grew quickly in the spring. Prices rose and buyers waited for better deals. The new shop "
    "was opened by the mayor."
)


@pytest.fixture
def refined(client, make_tenant):
    headers = make_tenant().headers
    body = client.post("/v1/refine", json={"text": DRAFT, "profile": "creative", "seed": 0}, headers=headers)
    assert body.status_code == 200, body.text
    return body.json(), headers


def _apply(client, headers, body, accept):
    answer = client.post(
        "/v1/refine/apply",
        json={"text": body["original_text"], "suggestions": body["suggestions"], "accept": accept},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_each_kept_edit_is_a_suggestion_in_words(refined):
    body, _ = refined
    suggestions = body["suggestions"]
    assert [s["edit"] for s in suggestions] == body["edits"] and len(suggestions) >= 2
    for suggestion in suggestions:
        assert not re.search(r"[a-z]_[a-z]|[+-]:", suggestion["label"]), suggestion  # words, not edit names
        assert suggestion["label"][0].isupper()
        assert re.fullmatch(r"to (raise|lower) [a-z ]+ toward the target", suggestion["reason"])
        assert suggestion["before"] != suggestion["after"]
    labels = [s["label"] for s in suggestions]
    assert "Dropped a positive adjective: removed 'wonderful'" in labels  # the words it changed, quoted


def test_accepting_all_none_or_some_applies_exactly_those(client, refined):
    body, headers = refined
    ids = [s["id"] for s in body["suggestions"]]
    everything = _apply(client, headers, body, ids)
    assert everything["text"] == body["text"] and everything["applied"] == ids and everything["skipped"] == []
    nothing = _apply(client, headers, body, [])
    assert nothing["text"] == body["original_text"] and nothing["applied"] == []

    first = body["suggestions"][0]
    only_first = _apply(client, headers, body, [first["id"]])
    assert only_first["applied"] == [first["id"]]
    assert only_first["text"] == body["original_text"].replace(first["before"], first["after"], 1)
    assert only_first["text"] not in (body["text"], body["original_text"])

    rest = ids[1:]
    without_first = _apply(client, headers, body, rest)
    assert sorted(without_first["applied"] + without_first["skipped"]) == rest
    for skipped in without_first["skipped"]:  # it edits what the rejected first suggestion wrote
        suggestion = body["suggestions"][skipped]
        assert suggestion["before"] not in body["original_text"].split("\n\n")[suggestion["paragraph"]]


def test_suggestions_for_another_text_are_refused_by_name(client, refined):
    body, headers = refined
    answer = client.post(
        "/v1/refine/apply",
        json={
            "text": "One paragraph only.",
            "suggestions": body["suggestions"],
            "accept": [s["id"] for s in body["suggestions"]],
        },
        headers=headers,
    )
    if any(s["paragraph"] > 0 for s in body["suggestions"]):
        assert answer.status_code == 422 and "send the text the suggestions were made for" in answer.text
