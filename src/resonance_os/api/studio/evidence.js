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

const SENTENCE_KINDS = new Set(["question", "exclamation"]);

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Non-overlapping [start, end, kind] ranges, in order, of the counted phrases of the kinds `keep` selects. */
function ranges(text, evidence, keep) {
  const found = [];
  for (const [kind, phrase] of phrases(evidence)) {
    if (!keep(kind)) continue;
    const pattern = new RegExp(`(?<![\\w])${escapeRegExp(phrase.trim())}(?![\\w])`, "gi");
    for (const match of text.matchAll(pattern)) found.push([match.index, match.index + match[0].length, kind]);
  }
  found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const kept = [];
  for (const range of found) if (!kept.length || range[0] >= kept[kept.length - 1][1]) kept.push(range);
  return kept;
}

function mark(kind) {
  const node = document.createElement("mark");
  node.className = `ev-${kind}`;
  node.title = EVIDENCE_KINDS[kind];
  return node;
}

/**
 * Paragraph nodes of `text` with each counted sentence (questions, exclamations) wrapped in a titled
 * <mark>, and each counted phrase (similes, passives, boosters, hedges) in a <mark> inside it or outside.
 */
export function highlight(text, evidence) {
  const sentences = ranges(text, evidence, (kind) => SENTENCE_KINDS.has(kind));
  const crosses = ([start, end]) => sentences.some(([s, e]) => (start < s && end > s) || (start < e && end > e));
  const words = ranges(text, evidence, (kind) => !SENTENCE_KINDS.has(kind)).filter((range) => !crosses(range));
  const paragraphs = [document.createElement("p")];
  const current = (inside) => inside ?? paragraphs[paragraphs.length - 1];
  const plain = (inside, chunk) => {
    if (inside) return inside.append(chunk);
    chunk.split(/\n\s*\n/).forEach((part, i) => {
      if (i > 0) paragraphs.push(document.createElement("p"));
      if (part) current(null).append(part);
    });
  };
  const withPhrases = (inside, from, to) => {
    let position = from;
    for (const [start, end, kind] of words) {
      if (start < from || end > to) continue;
      plain(inside, text.slice(position, start));
      const node = mark(kind);
      node.textContent = text.slice(start, end);
      current(inside).append(node);
      position = end;
    }
    plain(inside, text.slice(position, to));
  };
  let position = 0;
  for (const [start, end, kind] of sentences) {
    withPhrases(null, position, start);
    const node = mark(kind);
    withPhrases(node, start, end);
    current(null).append(node);
    position = end;
  }
  withPhrases(null, position, text.length);
  return paragraphs;
}
