from resonance_os.quality.repetition import meta_text, repetition_report

PARAGRAPH = (
    "The ferry left before dawn, loaded with bicycles and crates of bread. By the time the fog "
    "lifted, the island was already in sight, and the captain slowed the engine to let the gulls pass."
)
OTHER = "Tickets are sold at the harbour office, which opens at six and closes when the last boat is in."


def test_real_prose_is_clean():
    report = repetition_report(PARAGRAPH)
    assert report.repetition == 0.0 and report.meta_text == []


def test_a_paragraph_said_twice_is_penalised_fully():
    assert repetition_report(PARAGRAPH + " " + PARAGRAPH).within == 1.0


def test_copying_an_earlier_paragraph_or_the_context_is_penalised():
    article = PARAGRAPH + "\n\n" + OTHER + " " + PARAGRAPH
    assert repetition_report(article).copied > 0.5
    assert repetition_report(OTHER, context=[OTHER + " And more."]).copied == 1.0
    assert repetition_report(OTHER, context=[PARAGRAPH]).copied == 0.0


def test_meta_text_and_metric_names_are_caught():
    leaks = [
        "Here's a more polished version of the paragraph with suggested edits: the ferry left.",
        "Sure! The ferry left before dawn.",
        "The ferry left before dawn, raising the emotional valence of the scene.",
        "I hope this helps. The ferry left.",
        # what a small model says when asked to rewrite a sentence
        "This rephrased version uses the past perfect tense for the ferry.",
        "I'll rephrase that for you: the ferry left before dawn.",
        "The ferry left before dawn (present tense).",
        # a chat assistant's offer, found among SmolLM2's drafts of the SFT candidates
        "I'm excited to help you fix your leaky roof! The ferry left before dawn.",
        "I'll do my best to assist wherever possible, whatever the ferry does.",
        "How can I help you today? The ferry left.",
        # the text describing itself, as the technical voice adapter's drafts did
        "This article focuses on restoring an old sailing boat using local resources.",
        "The first paragraph provides information about the purpose of the project.",
        "The final paragraph should conclude this piece.",
        "The second sentence describes the process of restoring the ferry.",
        # the technical adapter's drafts after 24 more HR-GRPO steps
        "The introduction provides context for understanding what a town loses.",
        "This entry introduces the concept of the first week by mentioning the job description.",
    ]
    for text in leaks:
        assert meta_text(text), text
        assert repetition_report(text).repetition == 1.0
    assert meta_text(PARAGRAPH) == []
    assert meta_text("We ship a new version every week; here is the text of the law.") == []
    assert meta_text("The tense crew let me revisit the rephrasing of the old ferry song.") == []
    assert meta_text('"I am glad to see you," said the captain, and went to help the crew.') == []
    assert meta_text("She read the article twice; the text of the treaty was on the first page.") == []
    assert meta_text("The judge read the first sentence aloud, and the court fell silent.") == []
    assert (
        meta_text("The introduction of the railway provides work; the entry of the troops will wait.") == []
    )
