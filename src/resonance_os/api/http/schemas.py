"""Pydantic models of every request and response body (they are also the OpenAPI schema at /docs)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, model_validator

from resonance_os.api.settings import MAX_PROMPT_CHARS, MAX_TEXT_CHARS
from resonance_os.api.text.steering import MAX_PARAGRAPH_CHARS
from resonance_os.core.hrv_constants import GAP_CONVENTION, REWARD_TERM_MEANINGS
from resonance_os.core.hrv_types import validate_hrv
from resonance_os.core.limits import MAX_PARAGRAPHS
from resonance_os.generation.topics import normalized_length


def _normalized_prompt_fits(prompt: str) -> str:
    """Refuse a prompt that Unicode normalisation (NFKC, which the writer applies) makes too long."""
    length = normalized_length(prompt)
    if length > MAX_PROMPT_CHARS:
        raise ValueError(
            f"the prompt is {length} characters after Unicode normalisation (NFKC expands some "
            f"characters, e.g. U+FDF2 into 4), over the {MAX_PROMPT_CHARS}-character limit; shorten it"
        )
    return prompt


Prompt = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PROMPT_CHARS, description="What to write about."),
    AfterValidator(_normalized_prompt_fits),
]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="English text to measure.")]
Name = Annotated[str, Field(min_length=1, max_length=64, description="Letters, digits, '-', '_', '.'.")]
HRVList = Annotated[
    list[float],
    Field(min_length=8, max_length=8, description="8 values in [0, 1] in HRV_DIMENSIONS order."),
    AfterValidator(validate_hrv),
]
ItemId = Annotated[str, Field(min_length=1, max_length=64)]
RewardChoice = Literal["fast", "lm"]
"""A writing reward (``quality.reward.REWARDS``): fast (shipped models) or lm (SmolLM2, docs/reward.md)."""


def _nul_path(value: Any, path: str) -> str | None:
    """The JSON path of the first string (value or key) in ``value`` holding a NUL character."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and "\x00" in key:
                return where
            found = _nul_path(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


class Body(BaseModel):
    """A request body: unknown fields and NUL characters (which PostgreSQL cannot store) are refused."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        where = _nul_path(data, "")
        if where:
            raise ValueError(f"{where} contains a NUL character (\\u0000); remove it from the text")
        return data


# --- text -------------------------------------------------------------------------------------


class AnalyzeRequest(Body):
    text: Text
    evidence: bool = Field(True, description="Include per-dimension evidence.")


class AnalyzeResponse(BaseModel):
    hrv: dict[str, float]
    vector: list[float]
    n_words: int
    n_sentences: int
    evidence: dict[str, Any] | None = None


class ScoreRequest(Body):
    text: Text
    profile: Name | None = Field(None, description="One of your profiles (or a built-in template).")
    target_hrv: HRVList | None = None
    prompt: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PROMPT_CHARS,
        description="What the text should be about (topic term).",
    )
    reward: RewardChoice = Field(
        "fast",
        description="The writing reward to score with: fast (shipped models, a millisecond a paragraph) "
        "or lm (SmolLM2 reads fluency and coherence; about a second a paragraph, the first lm request "
        "of a server process loads the model; 422 naming the fix on a server without it).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> ScoreRequest:
        if (self.profile is None) == (self.target_hrv is None):
            raise ValueError("give exactly one of profile or target_hrv")
        return self


class WritingTerms(BaseModel):
    """The writing reward and its terms (``quality.reward``), each in [0, 1]."""

    resonance: float = Field(description=REWARD_TERM_MEANINGS["resonance"])
    fluency: float = Field(description=REWARD_TERM_MEANINGS["fluency"])
    coherence: float = Field(description=REWARD_TERM_MEANINGS["coherence"])
    topic: float | None = Field(description=REWARD_TERM_MEANINGS["topic"])
    repetition: float = Field(description=REWARD_TERM_MEANINGS["repetition"])
    reward: float = Field(
        description=REWARD_TERM_MEANINGS["reward"]
        + " Formula: resonance x fluency^2 x coherence^0.35 x topic x (1 - repetition) (docs/reward.md)."
    )
    meta_text: list[str] = Field(description="Leaked meta-text found (e.g. 'Here is the revised paragraph').")


class ScoreResponse(WritingTerms):
    hrv: dict[str, float]
    target_hrv: dict[str, float]
    gaps: dict[str, float] = Field(description=f"Per dimension, {GAP_CONVENTION}.")
    reward_model_score: float | None = Field(
        None, description="Your latest reward model's score, if trained."
    )


# --- generation -------------------------------------------------------------------------------


class HrGenerateRequest(Body):
    """The original ResonanceOS's documented body; ``tenant`` defaults to the API key's own tenant,
    ``profile_name`` to the default profile."""

    prompt: Prompt
    tenant: Name | None = None
    profile_name: Name | None = None
    reward: RewardChoice = Field(
        "fast",
        description="The writing reward that picks drafts, guards edits and scores the article, as in "
        "POST /v1/generate: fast (the default) or lm (SmolLM2; 422 naming the fix on a server without it).",
    )


class HrGenerateResponse(BaseModel):
    article: str
    hrv_feedback: list[float] = Field(
        description="The article's measured HRV: 8 floats in HRV_DIMENSIONS order, as the original returned it."
    )
    hrv: dict[str, float] = Field(description="The same HRV by dimension name.")
    reward: WritingTerms = Field(description="The article's writing reward and its terms.")


class GenerateRequest(Body):
    prompt: Prompt
    profile: Name | None = None
    target_hrv: HRVList | None = None
    paragraphs: int = Field(3, ge=1, le=MAX_PARAGRAPHS)
    seed: int | None = Field(None, ge=0, le=2**32 - 1)
    policy: str | None = Field(
        None, max_length=64, description="Id of a finished training job to steer with."
    )
    adapter: bool = Field(
        True,
        description="Draft with the profile's voice adapter when it has one (the built-in profiles "
        "ship one; a profile's own is trained as a job) and the server writes with its local model; "
        "false: with the bare model.",
    )
    reward: RewardChoice | None = Field(
        None,
        description="The writing reward that picks drafts, guards edits and scores the article: fast "
        "(the default) or lm (SmolLM2; about a second per draft scored, 422 naming the fix on a server "
        "without it). With a policy: the reward its run trained on (another is refused).",
    )

    @model_validator(mode="after")
    def _at_most_one_target(self) -> GenerateRequest:
        if self.profile is not None and self.target_hrv is not None:
            raise ValueError("give profile or target_hrv, not both")
        return self


class GenerateResponse(BaseModel):
    id: str = Field(description="Item id, for /v1/feedback.")
    article: str
    paragraphs: list[str]
    hrv: dict[str, float]
    target_hrv: dict[str, float]
    resonance: float
    reward: WritingTerms = Field(description="The article's writing reward and its terms.")
    policy: str | None = None
    backend: str | None = Field(
        None,
        description="What drafted it: 'local', 'local+voice (<profile>)' (the local model with the "
        "profile's voice adapter), an OpenAI-compatible model, or "
        "'builtin (template draft mode)', the offline template composer (a draft mode, not a writer).",
    )
    voice_adapter: str | None = Field(
        None, description="The profile ('tenant/name') whose voice adapter drafted it; null: none did."
    )


class GenerateProgress(BaseModel):
    """Data of a ``progress`` event of ``POST /v1/generate/stream``."""

    paragraph: int = Field(description="The paragraph being written now, from 1.")
    paragraphs: int = Field(description="How many paragraphs the article will have.")
    expected_s: float | None = Field(
        default=None,
        description="About how long this paragraph takes (recent paragraphs' median); null if unknown.",
    )


class RefineRequest(Body):
    text: Text = Field(description="Your text; paragraphs are separated by blank lines.")
    profile: Name | None = Field(None, description="One of your profiles (or a built-in template).")
    target_hrv: HRVList | None = None
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the edit order (same seed, same edits).")
    reward: RewardChoice = Field(
        "fast",
        description="The writing reward that guards each edit and scores the text before and after: fast "
        "(the default) or lm (SmolLM2; about a second per edit weighed, 422 naming the fix on a server "
        "without it).",
    )

    @model_validator(mode="after")
    def _at_most_one_target(self) -> RefineRequest:
        if self.profile is not None and self.target_hrv is not None:
            raise ValueError("give profile or target_hrv, not both")
        return self


class DiffSegment(BaseModel):
    op: Literal["equal", "delete", "insert"]
    text: str


class RefinedScore(WritingTerms):
    hrv: dict[str, float] = Field(description="The whole text's measured HRV by dimension.")


class RefineSuggestion(BaseModel):
    """One kept edit, to accept or reject on its own (``POST /v1/refine/apply``)."""

    id: int
    paragraph: int = Field(description="The paragraph it edits, from 0.")
    edit: str = Field(description="The refiner's name for it, e.g. 'emotional_valence-:colder_word'.")
    label: str = Field(
        description="The edit in words, e.g. \"Made a word less warm: 'delighted' -> 'pleased'\"."
    )
    reason: str = Field(description="Why, e.g. 'to lower emotional valence toward the target'.")
    before: str = Field(description="The sentences it replaces.")
    after: str = Field(description="What it writes instead.")


class RefineResponse(BaseModel):
    text: str = Field(description="The edited text (every suggestion accepted).")
    original_text: str = Field(description="Your text as edited: paragraphs stripped, one blank line apart.")
    edits: list[str] = Field(description="The kept edits, in order (e.g. 'add_question').")
    diff: list[DiffSegment] = Field(
        description="Word diff: equal + delete segments read the original, equal + insert the edit."
    )
    target_hrv: dict[str, float]
    before: RefinedScore = Field(description="The original's HRV, writing reward and terms.")
    after: RefinedScore = Field(description="The edited text's HRV, writing reward and terms.")
    suggestions: list[RefineSuggestion] = Field(description="Each kept edit, in the order it was made.")


class RefineApplyRequest(Body):
    text: Text = Field(description="The original text the suggestions were made for (``original_text``).")
    suggestions: list[RefineSuggestion] = Field(
        max_length=1000, description="``POST /v1/refine``'s suggestions."
    )
    accept: list[int] = Field(max_length=1000, description="The ids of the suggestions to apply.")


class RefineApplyResponse(BaseModel):
    text: str = Field(description="The text with the accepted suggestions applied, in order.")
    applied: list[int]
    skipped: list[int] = Field(
        description="Accepted suggestions that could not apply alone: each edits a sentence that a rejected "
        "suggestion wrote."
    )


# --- profiles ---------------------------------------------------------------------------------


class ProfileCreate(Body):
    name: Name
    hrv: HRVList
    description: str | None = Field(None, max_length=2000)


class ProfileUpdate(Body):
    hrv: HRVList
    description: str | None = Field(None, max_length=2000)


class ProfileFromText(Body):
    name: Name
    text: Text
    description: str | None = Field(None, max_length=2000)


class ProfileOut(BaseModel):
    name: str
    hrv: dict[str, float]
    description: str | None = None
    version: int | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    warnings: list[str] = Field(
        default_factory=list,
        description="Why the saved values may mislead, e.g. a sample too short to measure.",
    )


class ProfileList(BaseModel):
    profiles: list[ProfileOut]


class ProfileHistory(BaseModel):
    name: str
    versions: list[ProfileOut]


# --- feedback and reward model ----------------------------------------------------------------


class ItemRef(Body):
    """A generated item by id, or a text to be measured and stored as a submitted item."""

    id: ItemId | None = None
    text: Text | None = None

    @model_validator(mode="after")
    def _one(self) -> ItemRef:
        if (self.id is None) == (self.text is None):
            raise ValueError("give exactly one of id or text")
        return self


class FeedbackRequest(Body):
    """A rating (1-5) of ``item``, or a preference between ``item`` and ``other`` (``preferred``)."""

    kind: Literal["rating", "preference"]
    item: ItemRef
    other: ItemRef | None = None
    rating: StrictInt | None = Field(
        None, ge=1, le=5, description="A whole number 1-5 (not 5.0, '5' or true)."
    )
    preferred: Literal["a", "b"] | None = Field(None, description="'a' = item, 'b' = other.")
    target_hrv: HRVList | None = Field(None, description="Default: the item's generation target.")
    profile: Name | None = None
    prompt: Prompt | None = Field(None, description="What the texts answer. Default: the item's prompt.")

    @model_validator(mode="after")
    def _shape(self) -> FeedbackRequest:
        if self.kind == "rating" and (self.rating is None or self.other is not None or self.preferred):
            raise ValueError("a rating needs rating (1-5) and no other/preferred")
        if self.kind == "preference" and (self.other is None or self.preferred is None or self.rating):
            raise ValueError("a preference needs other and preferred ('a' or 'b') and no rating")
        if self.kind == "preference" and self.item == self.other:
            raise ValueError("a preference compares two different items; item and other are the same")
        if self.profile is not None and self.target_hrv is not None:
            raise ValueError("give profile or target_hrv, not both")
        return self


class FeedbackResponse(BaseModel):
    id: str
    kind: str
    item_ids: list[str]


class RewardTrainRequest(Body):
    holdout_fraction: float = Field(0.2, ge=0.05, le=0.5)
    seed: int = Field(0, ge=0, le=2**32 - 1)


class RewardModelOut(BaseModel):
    version: int
    created_at: datetime
    metrics: dict[str, Any]


# --- training jobs ----------------------------------------------------------------------------


class TrainRequest(Body):
    profile: Name | None = None
    target_hrv: HRVList | None = None
    timesteps: int = Field(5000, ge=64, le=1_000_000)
    seed: int = Field(0, ge=0, le=2**32 - 1)
    use_reward_model: bool = Field(True, description="Blend in your latest reward model, if trained.")
    reward: RewardChoice = Field(
        "fast",
        description="The writing reward the policy trains on: fast (shipped models, a millisecond a "
        "revision) or lm (SmolLM2 reads fluency and coherence; seconds a revision). The run records it. "
        "lm on a server without SmolLM2 is refused here (422 naming the fix), not in the job.",
    )

    @model_validator(mode="after")
    def _one_target(self) -> TrainRequest:
        if (self.profile is None) == (self.target_hrv is None):
            raise ValueError("give exactly one of profile or target_hrv")
        return self


JobState = Literal["queued", "starting", "running", "succeeded", "failed", "cancelled"]


class JobOut(BaseModel):
    id: str
    kind: str
    state: JobState
    progress: float
    metrics: dict[str, Any]
    error: str | None = None
    params: dict[str, Any]
    attempts: int = Field(0, description="Worker processes that have run it (a killed one is replaced).")
    checkpoint_timesteps: int | None = Field(None, description="Timesteps in its newest checkpoint.")
    resumed_from: int | None = Field(
        None, description="Timesteps of the checkpoint this attempt resumed from."
    )
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None


class JobList(BaseModel):
    jobs: list[JobOut] = Field(description="Your jobs, newest first.")


class CurvePoint(BaseModel):
    model_config = ConfigDict(extra="allow")

    timesteps: float = Field(description="Environment steps trained when the update ended.")
    episode_reward_mean: float | None = Field(None, description="Mean return of the episodes it saw.")


class JobCurve(BaseModel):
    id: str
    state: JobState
    progress: float
    points: list[CurvePoint] = Field(
        description="The training metrics, one point per update, oldest first (at most 500, evenly "
        "thinned): timesteps, episode_reward_mean and the trainer's other numbers (loss, entropy_loss, "
        "approx_kl, ...). Empty until the first update ends."
    )


class WorkersHealth(BaseModel):
    """The text workers' readiness (``TextWorkers.readiness``)."""

    ready: bool = Field(description="Every text worker has loaded and warmed its models.")
    processes: int = Field(description="Text worker processes (0: calls run in the server process).")
    ready_processes: int
    starting_s: float | None = Field(
        description="Seconds the slowest worker has been starting; null when ready."
    )
    expected_start_s: float | None = Field(
        description="About how long a start takes here (the last measured start); null before the first."
    )
    paragraph_s: float | None = Field(
        description="About how long one paragraph takes to write now (median of the last ones); null before any."
    )


class Health(BaseModel):
    status: Literal["starting", "ready"] = Field(
        description="ready: writing, refining and scoring start at once; starting: the text workers are "
        "still loading the language model (calls wait for them)."
    )
    version: str
    database: str
    workers: WorkersHealth


# --- steering (the Studio's sliders) ----------------------------------------------------------


class SteerRequest(Body):
    paragraph: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_PARAGRAPH_CHARS,
        description="The paragraph to write again, steered (give this or topic).",
    )
    topic: Prompt | None = Field(
        None, description="Write a new paragraph about this instead (the held-out figures' prompt)."
    )
    steer: dict[str, float] = Field(
        default_factory=dict,
        max_length=8,
        description="Strength in [-1, 1] by dimension (0 = off); only the steerable dimensions "
        "(GET /v1/steer/dimensions). Empty: the unsteered model.",
    )
    seed: int = Field(
        0, ge=0, le=2**32 - 1, description="Sampling seed: the same request gives the same paragraph."
    )

    @model_validator(mode="after")
    def _paragraph_or_topic(self) -> SteerRequest:
        if (self.paragraph is None) == (self.topic is None):
            raise ValueError("give exactly one of paragraph or topic")
        if self.paragraph is not None and not self.paragraph.strip():
            raise ValueError("paragraph is blank; send the paragraph's text")
        return self


class SteerResponse(BaseModel):
    text: str = Field(description="The paragraph the steered model wrote.")
    hrv: dict[str, float] = Field(description="Its measured HRV by dimension.")
    original_hrv: dict[str, float] | None = Field(
        description="The measured HRV of the paragraph sent; null for a topic."
    )
    steer: dict[str, float] = Field(description="The strengths applied, by dimension.")
    seed: int
    model: str = Field(description="The model the steering directions were built for.")
    seconds: float = Field(description="Seconds the model took to write it.")


class SteerDimension(BaseModel):
    name: str
    steerable: bool
    layer: int | None = Field(description="The decoder layer its direction is added after.")
    reason: str | None = Field(description="Why it cannot be steered; null when it can.")
    curve: list[float] | None = Field(
        description="Held-out dose-response: the mean measured dimension at each of `strengths`."
    )
    rho: float | None = Field(description="Spearman rho between strength and the curve.")
    fluency_ratio: dict[str, float] | None = Field(
        description="Judged fluency (calibrated fluency under Gemma-3-270M, quality.judge) at strength "
        "-0.5 and +0.5 over unsteered, on the held-out prompts."
    )
    works_within: list[float] | None = Field(
        description="[lowest, highest] strength over which the held-out curve moves one way and judged "
        "fluency stays within 10% of unsteered: the range the Studio's slider offers."
    )


class SteerDimensions(BaseModel):
    available: bool = Field(description="This service can steer (it writes with its local model).")
    reason: str | None = Field(description="Why it cannot, and the fix; null when it can.")
    model: str | None
    strengths: list[float] = Field(description="The strengths of every curve.")
    heldout_prompts: list[str] = Field(description="The held-out topics the curves were measured on.")
    dimensions: list[SteerDimension]
