"""Creating a profile never silently replaces one: an existing name answers 409 naming it and the way to
overwrite (``?overwrite=true``), which saves a new version and keeps the old in the history; a sample too
short to measure a voice is saved with a warning stating the minimum."""

from __future__ import annotations

from resonance_os.profiles.sample import MIN_SAMPLE_WORDS

HRV = [0.4, 0.6, 0.35, 0.65, 0.2, 0.05, 0.3, 0.9]
LONG = " ".join(
    f"The harbour {w} at dawn, and the boats went out past the grey breakwater before the market opened."
    for w in [
        "woke",
        "stirred",
        "hummed",
        "glowed",
        "waited",
        "listened",
        "shivered",
        "sang",
        "slept",
        "breathed",
    ]
)


def test_from_text_with_an_existing_name_is_409_until_overwrite(client, make_tenant):
    h = make_tenant().headers
    first = client.post("/v1/profiles/from-text", json={"name": "voice", "text": LONG}, headers=h)
    assert first.status_code == 201 and first.json()["version"] == 1
    clash = client.post(
        "/v1/profiles/from-text", json={"name": "voice", "text": "Five words are not enough."}, headers=h
    )
    assert clash.status_code == 409
    message = clash.json()["error"]["message"]
    assert "'voice' already exists (version 1" in message and "?overwrite=true" in message
    assert client.get("/v1/profiles/voice", headers=h).json()["hrv"] == first.json()["hrv"]

    replaced = client.post(
        "/v1/profiles/from-text?overwrite=true",
        json={"name": "voice", "text": "Five words are not enough."},
        headers=h,
    )
    assert replaced.status_code == 201 and replaced.json()["version"] == 2
    history = client.get("/v1/profiles/voice/history", headers=h).json()["versions"]
    assert [v["version"] for v in history] == [1, 2] and history[0]["hrv"] == first.json()["hrv"]


def test_short_sample_is_saved_with_a_warning_stating_the_minimum(client, make_tenant):
    h = make_tenant().headers
    short = client.post(
        "/v1/profiles/from-text", json={"name": "short", "text": "Five words are not enough."}, headers=h
    )
    assert short.status_code == 201
    (warning,) = short.json()["warnings"]
    assert "5 words" in warning and f"at least {MIN_SAMPLE_WORDS}" in warning
    long = client.post("/v1/profiles/from-text", json={"name": "long", "text": LONG}, headers=h)
    assert len(LONG.split()) >= MIN_SAMPLE_WORDS and long.json()["warnings"] == []


def test_create_from_values_overwrites_only_when_asked(client, make_tenant):
    h = make_tenant().headers
    assert client.post("/v1/profiles", json={"name": "v", "hrv": HRV}, headers=h).status_code == 201
    clash = client.post("/v1/profiles", json={"name": "v", "hrv": [0.5] * 8}, headers=h)
    assert clash.status_code == 409 and "?overwrite=true" in clash.json()["error"]["message"]
    again = client.post("/v1/profiles?overwrite=true", json={"name": "v", "hrv": [0.5] * 8}, headers=h)
    assert again.status_code == 201 and again.json()["version"] == 2
