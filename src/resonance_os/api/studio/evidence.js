// Highlight in a text what the HRV extractor counted (from /v1/analyze's "evidence").

export const EVIDENCE_KINDS = {
  question: "questions",
  figurative: "similes and metaphors",
  passive: "passive clauses",
  exclamation: "exclamations",
  booster: "boosters",
  hedge: "hedges",
};

function phrases(evidence) {
  const list = (value) => (Array.isArray(value) ? value : []);
  return [
    ...list(evidence?.curiosity_index?.questions).map((p) => ["question", p]),
    ...list(evidence?.metaphor_density?.figurative_markers).map((p) => ["figurative", p]),
    ...list(evidence?.active_voice_ratio?.passives).map((p) => ["passive", p.phrase ?? p]),
    ...list(evidence?.emotional_intensity?.exclamatory_sentences).map((p) => ["exclamation", p]),
    ...list(evidence?.assertiveness_index?.boosters).map((p) => ["booster", p]),
    ...list(evidence?.assertiveness_index?.hedges).map((p) => ["hedge", p]),
  ].filter(([, phrase]) => typeof phrase === "string" && phrase.trim());
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Non-overlapping [start, end, kind] ranges of every counted phrase found in `text`, in order. */
function ranges(text, evidence) {
  const found = [];
  for (const [kind, phrase] of phrases(evidence)) {
    const pattern = new RegExp(`(?<![\\w])${escapeRegExp(phrase.trim())}(?![\\w])`, "gi");
    for (const match of text.matchAll(pattern)) found.push([match.index, match.index + match[0].length, kind]);
  }
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const kept = [];
  for (const range of found) if (!kept.length || range[0] >= kept[kept.length - 1][1]) kept.push(range);
  return kept;
}

/** Paragraph nodes of `text` with each counted phrase wrapped in a titled <mark>. */
export function highlight(text, evidence) {
  const marked = ranges(text, evidence);
  const paragraphs = [];
  let paragraph = document.createElement("p");
  let position = 0;
  const addPlain = (chunk) => {
    const parts = chunk.split(/\n\s*\n/);
    parts.forEach((part, i) => {
      if (i > 0) {
        paragraphs.push(paragraph);
        paragraph = document.createElement("p");
      }
      if (part) paragraph.append(part);
    });
  };
  for (const [start, end, kind] of marked) {
    addPlain(text.slice(position, start));
    const mark = document.createElement("mark");
    mark.className = `ev-${kind}`;
    mark.title = EVIDENCE_KINDS[kind];
    mark.textContent = text.slice(start, end);
    paragraph.append(mark);
    position = end;
  }
  addPlain(text.slice(position));
  paragraphs.push(paragraph);
  return paragraphs;
}
