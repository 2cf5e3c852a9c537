// Resonance Studio: sign in, profiles, write, analyze, rate, train, serve; every call goes through api.js.

import { call, describe, sentence, session, stream } from "./api.js";
import { label, lineChart, linesChart, radar } from "./charts.js";
import { highlight, EVIDENCE_KINDS } from "./evidence.js";
import { servePanel } from "./serve.js";
import { steerPanel } from "./steer.js";

const BUILTIN_TEMPLATES = ["professional", "creative", "technical"];

const $ = (selector) => document.querySelector(selector);
const state = {
  dimensions: [],
  terms: [],
  gap: "",
  training: { update_steps: 1 },
  compare: new Set(),
  profiles: [],
  selected: null,
  article: null,
  previous: null,
  refined: null,
  jobs: [],
  job: null,
  jobTimer: null,
  curve: [],
  paragraphTimer: null,
};
let serve = null; // the Train screen's serve box (serve.js), made at start

function make(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

// -- messages -----------------------------------------------------------------------------------

function showError(error) {
  const box = $("#message");
  box.textContent = describe(error);
  box.hidden = false;
  $("#notice").hidden = true;
  if (error.status === 401) signOut(false);
}

function notify(text, warning = false) {
  $("#message").hidden = true;
  const box = $("#notice");
  box.textContent = text;
  box.classList.toggle("warning", warning);
  box.hidden = false;
}

function clearMessages() {
  $("#message").hidden = true;
  $("#notice").hidden = true;
}

/** Run `work` for a submitted form: disable its button, show errors as messages. */
async function submitting(form, work) {
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  form.setAttribute("aria-busy", "true");
  clearMessages();
  try {
    await work();
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

// -- readiness --------------------------------------------------------------------------------

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (s) => `${Math.round(s)} s`;
const about = (s) => (s < 1 ? "under a second" : `about ${seconds(s)}`);

/** Wait until the service's text workers are ready (GET /health), telling the writer through `say` what is
 * happening meanwhile; resolves with the last health answer (null if the service could not be asked). */
async function whenReady(say) {
  for (;;) {
    const health = await fetch("/health")
      .then((response) => (response.ok ? response.json() : null))
      .catch(() => null);
    if (!health || health.status === "ready") return health;
    const { starting_s: waited, expected_start_s: expected } = health.workers;
    const estimate = expected ? about(expected) : "no estimate yet: this is the first start here";
    say(`Starting: loading the language model (${estimate}; ${seconds(waited ?? 0)} so far). Your request goes ahead as soon as it is loaded.`);
    await pause(1000);
  }
}

// -- sign in / out ------------------------------------------------------------------------------

async function signIn(event) {
  event.preventDefault();
  const input = $("#api-key");
  const key = input.value.trim();
  input.value = "";
  session.signIn(key);
  await submitting(event.target, async () => {
    await loadProfiles();
    enterStudio();
    $("#profiles-title").focus(); // the sign-in form is gone: start where the work starts
  });
}

function enterStudio() {
  $("#sign-in").hidden = true;
  $("#tabs").hidden = false;
  $("#sign-out").hidden = false;
  showTab("profiles");
}

function signOut(clear = true) {
  session.signOut();
  state.profiles = [];
  state.selected = null;
  state.article = null;
  state.previous = null;
  state.jobs = [];
  state.job = null;
  serve.reset();
  clearTimeout(state.jobTimer);
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = true;
  for (const result of ["#write-result", "#write-progress-box", "#analyze-result", "#refine-result", "#profile-detail", "#ab-form", "#job-detail"]) $(result).hidden = true;
  $("#tabs").hidden = true;
  $("#sign-out").hidden = true;
  $("#sign-in").hidden = false;
  if (clear) {
    clearMessages();
    notify("Signed out. Your key was removed from this tab.");
  }
  $("#api-key").focus();
}

function showTab(name) {
  for (const button of document.querySelectorAll("#tabs button")) {
    if (button.dataset.tab === name) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.id !== `panel-${name}`;
}

// -- profiles -----------------------------------------------------------------------------------

async function loadProfiles() {
  const { profiles } = await call("GET", "/v1/profiles");
  state.profiles = profiles;
  renderProfiles();
}

function renderProfiles() {
  const list = $("#profile-list");
  list.replaceChildren();
  for (const profile of state.profiles) {
    const item = make("li");
    const button = make("button", { type: "button", class: "card" }, profile.name);
    if (profile.name === state.selected) button.setAttribute("aria-pressed", "true");
    else button.setAttribute("aria-pressed", "false");
    button.addEventListener("click", () => selectProfile(profile.name));
    item.append(button);
    list.append(item);
  }
  $("#profile-empty").hidden = state.profiles.length > 0;
  for (const select of document.querySelectorAll(".profile-select")) {
    const current = select.value;
    select.replaceChildren();
    const own = make("optgroup", { label: "Your profiles" });
    for (const profile of state.profiles) own.append(make("option", { value: profile.name }, profile.name));
    const builtin = make("optgroup", { label: "Built-in templates" });
    for (const name of BUILTIN_TEMPLATES) builtin.append(make("option", { value: name }, name));
    if (state.profiles.length) select.append(own);
    select.append(builtin);
    if ([...select.options].some((option) => option.value === current)) select.value = current;
  }
}

function selectProfile(name) {
  state.selected = name;
  const profile = state.profiles.find((p) => p.name === name);
  renderProfiles();
  if (!profile) {
    $("#profile-detail").hidden = true;
    return;
  }
  $("#detail-title").textContent = profile.name;
  $("#detail-meta").textContent = [profile.description, profile.version ? `version ${profile.version}` : null]
    .filter(Boolean)
    .join(" · ");
  $("#detail-chart").replaceChildren(radar(state.dimensions, [{ name: profile.name, values: profile.hrv, kind: "target" }]));
  $("#history-list").hidden = true;
  $("#profile-detail").hidden = false;
}

async function showHistory() {
  const name = state.selected;
  try {
    const { versions } = await call("GET", `/v1/profiles/${encodeURIComponent(name)}/history`);
    const list = $("#history-list");
    list.replaceChildren();
    for (const version of versions.slice().reverse()) {
      const item = make("li");
      const when = version.updated_at ?? version.created_at ?? "";
      item.append(make("span", {}, `Version ${version.version}${when ? ` · ${new Date(when).toLocaleString()}` : ""}`));
      const revert = make("button", { type: "button", class: "quiet" }, `Revert to version ${version.version}`);
      revert.addEventListener("click", () => revertTo(name, version));
      item.append(revert);
      list.append(item);
    }
    list.hidden = false;
  } catch (error) {
    showError(error);
  }
}

async function revertTo(name, version) {
  try {
    await call("PUT", `/v1/profiles/${encodeURIComponent(name)}`, {
      hrv: state.dimensions.map((d) => version.hrv[d.name]),
      description: version.description,
    });
    await loadProfiles();
    selectProfile(name);
    notify(`Profile ${name} reverted to version ${version.version} (saved as a new version).`);
  } catch (error) {
    showError(error);
  }
}

async function deleteProfile() {
  const name = state.selected;
  if (!window.confirm(`Delete profile ${name} and its history?`)) return;
  try {
    await call("DELETE", `/v1/profiles/${encodeURIComponent(name)}`);
    state.selected = null;
    $("#profile-detail").hidden = true;
    await loadProfiles();
    notify(`Profile ${name} deleted.`);
  } catch (error) {
    showError(error);
  }
}

function buildSliders() {
  const box = $("#from-sliders");
  for (const dimension of state.dimensions) {
    const id = `slider-${dimension.name}`;
    const row = make("div", { class: "slider" });
    row.append(make("label", { for: id }, label(dimension.name)));
    const input = make("input", { id, type: "range", min: "0", max: "1", step: "0.01", value: "0.5", "aria-describedby": `${id}-hint` });
    const output = make("output", { for: id }, "0.50");
    input.addEventListener("input", () => (output.textContent = Number(input.value).toFixed(2)));
    row.append(input, output, make("p", { id: `${id}-hint`, class: "hint" }, dimension.description));
    box.append(row);
  }
}

function switchSource() {
  const fromText = document.querySelector("input[name=source]:checked").value === "text";
  $("#from-text").hidden = !fromText;
  $("#from-sliders").hidden = fromText;
}

async function addFiles(event) {
  const texts = await Promise.all([...event.target.files].map((file) => file.text()));
  const area = $("#voice-text");
  area.value = [area.value.trim(), ...texts.map((t) => t.trim())].filter(Boolean).join("\n\n");
  updateCounter(area);
  notify(`${texts.length} file(s) added to the text.`);
}

/** Ask before a new profile replaces `name`; resolves true when the writer chose to replace it. */
function confirmOverwrite(name, existing, fromText) {
  const dialog = $("#overwrite-dialog");
  const version = existing?.version ?? 1;
  const saved = existing?.updated_at ? `, saved ${new Date(existing.updated_at).toLocaleString()}` : "";
  const source = fromText ? "the voice measured from this text" : "these slider values";
  $("#overwrite-text").textContent =
    `A profile named ${name} already exists (version ${version}${saved}). Replace it with ${source}? ` +
    `It becomes version ${version + 1}; the earlier versions stay in its history.`;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "replace"), { once: true }));
}

async function createProfile(event) {
  event.preventDefault();
  const form = event.target;
  await submitting(form, async () => {
    const name = form.name.value.trim();
    const description = form.description.value.trim() || null;
    const fromText = form.source.value === "text";
    const save = (overwrite) => {
      const query = overwrite ? "?overwrite=true" : "";
      return fromText
        ? call("POST", `/v1/profiles/from-text${query}`, { name, text: form.text.value, description })
        : call("POST", `/v1/profiles${query}`, {
            name,
            description,
            hrv: state.dimensions.map((d) => Number($(`#slider-${d.name}`).value)),
          });
    };
    let profile;
    try {
      profile = await save(false);
    } catch (error) {
      if (error.status !== 409) throw error;
      const existing = state.profiles.find((p) => p.name === name);
      if (!(await confirmOverwrite(name, existing, fromText))) {
        notify(`Nothing was changed: ${name} is as it was. Choose another name to keep both profiles.`);
        form.name.focus();
        return;
      }
      profile = await save(true);
    }
    await loadProfiles();
    selectProfile(profile.name);
    form.reset();
    switchSource();
    refreshCounters();
    const done = profile.version > 1 ? `Profile ${profile.name} replaced: now version ${profile.version}.` : `Profile ${profile.name} created.`;
    const warnings = (profile.warnings ?? []).map(sentence);
    notify([done, ...warnings].join(" "), warnings.length > 0);
  });
}

// -- text limits --------------------------------------------------------------------------------

const count = (n) => n.toLocaleString("en");

/** Show a text area's length against its limit (its `data-limit`, in characters as the service counts them) and, with
 * `data-min-words`, its words against the minimum; over the limit the form cannot be sent. */
function updateCounter(area) {
  const limit = Number(area.dataset.limit);
  const chars = [...area.value].length; // code points, as the service counts
  const parts = [];
  if (area.dataset.minWords) {
    const words = area.value.split(/\s+/).filter(Boolean).length;
    const minimum = Number(area.dataset.minWords);
    parts.push(words < minimum ? `${count(words)} of the ${count(minimum)} words a voice needs` : `${count(words)} words`);
  }
  parts.push(`${count(chars)} / ${count(limit)} characters`);
  const over = chars - limit;
  const problem = over > 0 ? `${count(over)} characters over the limit: shorten the text.` : "";
  const counter = $(`#${area.id}-count`);
  counter.textContent = parts.join(" · ") + (problem ? ` — ${problem}` : "");
  counter.classList.toggle("over", over > 0);
  area.setCustomValidity(problem);
}

function refreshCounters() {
  for (const area of document.querySelectorAll("textarea[data-limit]")) updateCounter(area);
}

// -- measured vs target -------------------------------------------------------------------------

/** A row heading: the name, and under it what it means in one sentence (also its hover title). */
function namedHeading(name, description) {
  const heading = make("th", { scope: "row", title: description }, label(name));
  heading.append(make("span", { class: "meaning" }, description));
  return heading;
}

function gapTable(measured, target, caption = "Per-dimension gap") {
  const table = make("table", { class: "gaps" });
  const title = make("caption", {}, caption);
  title.append(make("span", { class: "meaning" }, `${sentence(state.gap)} Gaps over 0.15 are in red.`));
  table.append(title);
  const head = make("tr");
  for (const title of ["Dimension", "Target", "Measured", "Gap"]) head.append(make("th", { scope: "col" }, title));
  const thead = make("thead");
  thead.append(head);
  table.append(thead);
  const body = make("tbody");
  for (const dimension of state.dimensions) {
    const gap = target[dimension.name] - measured[dimension.name];
    const row = make("tr");
    row.append(namedHeading(dimension.name, dimension.description));
    row.append(make("td", {}, target[dimension.name].toFixed(2)));
    row.append(make("td", {}, measured[dimension.name].toFixed(2)));
    const cell = make("td", { class: Math.abs(gap) > 0.15 ? "far" : "near" }, `${gap >= 0 ? "+" : "−"}${Math.abs(gap).toFixed(2)}`);
    row.append(cell);
    body.append(row);
  }
  table.append(body);
  return table;
}

function termsTable(terms) {
  const table = make("table", { class: "terms" });
  table.append(make("caption", {}, "Quality terms and combined reward"));
  const body = make("tbody");
  for (const { name, description } of state.terms) {
    if (!(name in terms)) continue;
    const row = make("tr");
    row.append(namedHeading(name, description));
    row.append(make("td", {}, terms[name] === null ? "—" : terms[name].toFixed(3)));
    body.append(row);
  }
  table.append(body);
  return table;
}

function renderMeasure(container, measured, target, terms) {
  const charts = make("div", { class: "measure" });
  charts.append(
    radar(state.dimensions, [
      { name: "Target", values: target, kind: "target" },
      { name: "Measured", values: measured, kind: "measured" },
    ]),
  );
  const tables = make("div");
  tables.append(gapTable(measured, target), termsTable(terms));
  charts.append(tables);
  container.replaceChildren(charts);
}

// -- write, rate, analyze -----------------------------------------------------------------------

async function write(event) {
  event.preventDefault();
  const form = event.target;
  const button = form.querySelector("button[type=submit]");
  button.textContent = "Writing…";
  let written = false;
  await submitting(form, async () => {
    const body = {
      prompt: form.prompt.value,
      profile: form.profile.value,
      paragraphs: Number(form.paragraphs.value),
    };
    if (form.seed.value !== "") body.seed = Number(form.seed.value);
    if (form.policy.value) body.policy = form.policy.value;
    const bar = $("#write-progress");
    const status = $("#write-status");
    bar.max = body.paragraphs;
    bar.value = 0;
    $("#write-progress-box").hidden = false;
    await whenReady((text) => (status.textContent = text));
    status.textContent = "Waiting for the writer…";
    let result;
    try {
      result = await stream("/v1/generate/stream", body, (progress) => paragraphProgress(bar, status, progress));
    } finally {
      clearInterval(state.paragraphTimer);
    }
    bar.value = bar.max;
    status.textContent = `Wrote ${bar.max} of ${bar.max} paragraphs.`;
    const analyses = await Promise.all(
      result.paragraphs.map((text) => call("POST", "/v1/analyze", { text, evidence: true })),
    );
    state.previous = state.article;
    state.article = result;
    $("#article").replaceChildren(
      ...result.paragraphs.flatMap((text, i) => [
        ...highlight(text, analyses[i].evidence),
        paragraphNumbers(i + 1, analyses[i].hrv, result.target_hrv),
      ]),
    );
    if (state.previous) $("#draft-a").replaceChildren(...state.previous.paragraphs.map((p) => make("p", {}, p)));
    $("#ab-form").reset();
    $("#ab-form").hidden = !state.previous;
    renderMeasure($("#write-measure"), result.hrv, result.target_hrv, result.reward);
    $("#rate-form").reset();
    $("#write-result").hidden = false;
    const draftMode = (result.backend || "").includes("draft mode")
      ? " Drafted by the offline template composer (draft mode, not a writer): install the local model for real prose."
      : "";
    const voice = result.voice_adapter ? ` Drafted with the ${result.voice_adapter} voice adapter.` : "";
    notify(
      `Article written: reward ${result.reward.reward.toFixed(3)}, resonance ${result.reward.resonance.toFixed(3)}.${voice}${draftMode}`,
    );
    written = true;
  });
  if (!written) $("#write-progress-box").hidden = true;
  button.textContent = "Write article";
}

/** Show paragraph `paragraph` of `paragraphs` under way, once a second: the bar moves inside the paragraph by
 * its elapsed time against `expected_s` (the service's recent paragraph time; never past 95% before it ends). */
function paragraphProgress(bar, status, { paragraph, paragraphs, expected_s: expected }) {
  clearInterval(state.paragraphTimer);
  const began = performance.now();
  const show = () => {
    const elapsed = (performance.now() - began) / 1000;
    bar.max = paragraphs;
    const known = expected !== null && expected !== undefined;
    bar.value = paragraph - 1 + (known ? Math.min(elapsed / Math.max(expected, 0.1), 0.95) : 0);
    let timing = `${seconds(elapsed)} so far`;
    if (known) {
      const left = Math.max(expected - elapsed, 0) + expected * (paragraphs - paragraph);
      timing += `; a paragraph takes ${about(expected)} lately, ${about(left)} left for the article`;
    }
    status.textContent = `Writing paragraph ${paragraph} of ${paragraphs} (${timing})…`;
  };
  show();
  state.paragraphTimer = setInterval(show, 1000);
}

/** A paragraph's own measured dimensions against the article's target, folded under its largest gap. */
function paragraphNumbers(number, measured, target) {
  const gaps = state.dimensions.map((d) => [d, target[d.name] - measured[d.name]]);
  const [widest, gap] = gaps.reduce((a, b) => (Math.abs(b[1]) > Math.abs(a[1]) ? b : a));
  const details = make("details", { class: "numbers" });
  const sign = gap >= 0 ? "+" : "−";
  details.append(
    make("summary", {}, `Paragraph ${number} numbers (largest gap, target − measured: ${label(widest.name)} ${sign}${Math.abs(gap).toFixed(2)})`),
    gapTable(measured, target, `Paragraph ${number}: measured on its own, against the article's target`),
  );
  return details;
}

async function rate(event) {
  event.preventDefault();
  const form = event.target;
  await submitting(form, async () => {
    const rating = Number(form.rating.value);
    await call("POST", "/v1/feedback", { kind: "rating", item: { id: state.article.id }, rating });
    notify(`Thanks: your rating of ${rating}/5 was saved.`);
  });
}

async function prefer(event) {
  event.preventDefault();
  const form = event.target;
  await submitting(form, async () => {
    const preferred = form.preferred.value;
    await call("POST", "/v1/feedback", {
      kind: "preference",
      item: { id: state.previous.id },
      other: { id: state.article.id },
      preferred,
    });
    notify(`Thanks: your choice of draft ${preferred.toUpperCase()} was saved.`);
  });
}

// -- the reward model ---------------------------------------------------------------------------

const METRIC_LABELS = {
  ratings: "Ratings used",
  preferences: "Preferences used",
  rating_holdout: "Ratings held out",
  rating_mae: "Held-out rating error (MAE)",
  baseline_rating_mae: "Baseline rating error (MAE)",
  rating_spearman: "Held-out rank correlation",
  baseline_rating_spearman: "Baseline rank correlation",
  pairwise_accuracy: "Held-out pairwise accuracy",
  baseline_pairwise_accuracy: "Baseline pairwise accuracy",
};

const COUNTS = new Set(["ratings", "preferences", "rating_holdout"]);

function showRewardModel(model) {
  const box = $("#reward-model");
  if (!model) {
    box.replaceChildren(make("p", {}, "No reward model yet: rate some articles, then train it."));
    return;
  }
  const table = make("table", { class: "terms" });
  const created = new Date(model.created_at).toLocaleString();
  table.append(make("caption", {}, `Reward model version ${model.version} (${created})`));
  const body = make("tbody");
  for (const [key, title] of Object.entries(METRIC_LABELS)) {
    const value = model.metrics[key];
    if (typeof value !== "number") continue;
    const row = make("tr");
    row.append(make("th", { scope: "row" }, title));
    row.append(make("td", {}, COUNTS.has(key) ? String(value) : value.toFixed(3)));
    body.append(row);
  }
  table.append(body);
  box.replaceChildren(table);
}

async function loadRewardModel() {
  try {
    showRewardModel(await call("GET", "/v1/reward-model"));
  } catch (error) {
    if (error.status === 404) showRewardModel(null);
    else showError(error);
  }
}

/** Training is a job (kind reward_model) run by a worker: queue it, follow it, then show the model. */
async function trainRewardModel(event) {
  event.preventDefault();
  await submitting(event.target, async () => {
    let job = await call("POST", "/v1/reward-model/train", {});
    notify("Training the reward model…");
    while (ACTIVE.has(job.state)) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      job = await call("GET", `/v1/jobs/${encodeURIComponent(job.id)}`);
    }
    if (job.state !== "succeeded") throw new Error(`Reward model training ${job.state}: ${job.error}`);
    const model = await call("GET", "/v1/reward-model");
    showRewardModel(model);
    notify(`Reward model version ${model.version} trained.`);
  });
}

// -- training jobs ------------------------------------------------------------------------------

const ACTIVE = new Set(["queued", "starting", "running"]);
const POLL_MS = 1000;
const CURVE_TITLES = {
  episode_reward_mean: "Mean episode reward",
  episode_reward_std: "Episode reward spread (std)",
  loss: "Loss",
  policy_loss: "Policy loss",
  value_loss: "Value loss",
  entropy_loss: "Entropy loss",
  explained_variance: "Explained variance",
  approx_kl: "Approximate KL",
  clip_fraction: "Clip fraction",
  learning_rate: "Learning rate",
  fps: "Steps per second",
};
const curveTitle = (key) => CURVE_TITLES[key] ?? label(key);

const isPolicy = (job) => job.kind === "ppo";

/** Steps a job trains: PPO timesteps, or a voice adapter's SFT and HR-GRPO steps. */
const jobSteps = (job) => (isPolicy(job) ? Number(job.params.timesteps) : job.params.sft_steps + job.params.grpo_steps);

function jobName(job) {
  if (!isPolicy(job)) return `voice adapter of ${job.params.profile}, ${job.params.sft_steps} SFT + ${job.params.grpo_steps} HR-GRPO steps`;
  const toward = job.params.profile ? job.params.profile.replace(/^builtin\//, "") : "a custom target";
  const reward = job.params.reward === "lm" ? ", lm reward" : "";
  return `${toward}, ${Number(job.params.timesteps).toLocaleString("en")} steps${reward}`;
}

function jobStatus(job) {
  const total = jobSteps(job);
  const done = Math.round(job.progress * total);
  const finished = isPolicy(job)
    ? "Finished: pick it as the trained policy on the Write screen."
    : `Finished: articles written toward ${job.params.profile} now draft with this adapter; serve it below to call it through the OpenAI API.`;
  return {
    queued: "Waiting for a free worker…",
    starting: "Starting a worker…",
    running: `Training: ${done.toLocaleString("en")} of ${total.toLocaleString("en")} steps (${Math.round(job.progress * 100)}%).`,
    succeeded: finished,
    failed: `Failed: ${job.error}`,
    cancelled: "Cancelled.",
  }[job.state];
}

async function loadJobs() {
  ({ jobs: state.jobs } = await call("GET", "/v1/jobs?kind=ppo&kind=voice_adapter"));
  renderJobs();
  renderPolicies();
}

function renderJobs() {
  const list = $("#job-list");
  list.replaceChildren();
  for (const job of state.jobs) {
    const item = make("li");
    const button = make("button", { type: "button", class: "card job", "aria-pressed": String(job.id === state.job) });
    const percent = ACTIVE.has(job.state) && job.state !== "queued" ? ` ${Math.round(job.progress * 100)}%` : "";
    const served = serve.servedAs(job, state.jobs).map((id) => ` · served as ${id}`).join("");
    button.append(
      make("span", {}, jobName(job)),
      make("span", { class: `state ${job.state}` }, `${job.state}${percent}`),
      make("span", { class: "meta" }, `job ${job.id.slice(0, 8)} · ${new Date(job.created_at).toLocaleString()}${served}`),
    );
    button.addEventListener("click", () => selectJob(job.id));
    const compare = make("label", { class: "compare" });
    const box = make("input", { type: "checkbox", value: job.id, "aria-label": `Compare job ${job.id.slice(0, 8)}` });
    box.checked = state.compare.has(job.id);
    box.addEventListener("change", () => {
      if (box.checked) state.compare.add(job.id);
      else state.compare.delete(job.id);
      compareRuns();
    });
    compare.append(box, " compare");
    item.append(button, compare);
    list.append(item);
  }
  $("#job-empty").hidden = state.jobs.length > 0;
}

// -- training form and run comparison ------------------------------------------------------------

/** The Train form's timesteps, checked against what the trainer trains: whole updates of `update_steps`. */
function checkTimesteps() {
  const input = $("#job-timesteps");
  const update = state.training.update_steps;
  const steps = Number(input.value);
  const updates = steps / update;
  let problem = "";
  if (!Number.isInteger(steps) || steps < update) problem = `Train at least one update: ${count(update)} steps.`;
  else if (!Number.isInteger(updates)) {
    const lower = Math.floor(updates) * update;
    problem = `The trainer trains whole updates of ${count(update)} steps: choose ${count(lower)} or ${count(lower + update)}.`;
  }
  input.setCustomValidity(problem);
  $("#timesteps-hint").textContent =
    problem ||
    `${count(steps)} steps = ${count(updates)} update${updates === 1 ? "" : "s"} of ${count(update)}: the learning curve gets one point per update${updates === 1 ? " (one point: choose 3 or more updates for a curve)" : ""}.`;
}

/** The Train form's writing rewards (definitions.json): one this server cannot compute is offered disabled, saying why. */
function renderRewards() {
  const select = $("#job-reward");
  select.replaceChildren(
    ...state.training.rewards.map((reward) => {
      const option = make("option", { value: reward.name }, reward.name === "lm" ? "lm (SmolLM2)" : reward.name);
      option.disabled = Boolean(reward.unavailable);
      return option;
    }),
  );
  select.value = state.training.rewards[0].name;
  rewardHint();
}

/** What the chosen reward is, and why a reward is not offered here. */
function rewardHint() {
  const rewards = state.training.rewards;
  const chosen = rewards.find((reward) => reward.name === $("#job-reward").value);
  const missing = rewards.filter((reward) => reward.unavailable).map((reward) => `${reward.name} is not available on this server: ${reward.unavailable}.`);
  $("#job-reward-hint").textContent = [chosen.description, ...missing].join(" ");
}

/** "Use my reward model" only when there is one; otherwise disabled, saying why. */
async function rewardModelChoice() {
  const box = $("#job-reward-model");
  const model = await call("GET", "/v1/reward-model").catch(() => null);
  box.disabled = !model;
  if (!model) box.checked = false;
  $("#reward-model-hint").textContent = model
    ? `Version ${model.version}, trained ${new Date(model.created_at).toLocaleString()}: blended into the reward while training.`
    : "You have no reward model yet: rate at least 10 articles or pick 10 better drafts, then train one on the Learn screen.";
}

/** The runs ticked "compare": their learning curves for the chosen metric on one chart, and their latest metrics side by side. */
async function compareRuns() {
  const box = $("#compare");
  const ids = state.jobs.map((j) => j.id).filter((id) => state.compare.has(id));
  box.hidden = ids.length < 2;
  if (ids.length < 2) return;
  const curves = await Promise.all(ids.map((id) => call("GET", `/v1/jobs/${encodeURIComponent(id)}/metrics`)));
  const metric = $("#curve-metric").value || "episode_reward_mean";
  const named = ids.map((id, i) => {
    const job = state.jobs.find((j) => j.id === id);
    const points = curves[i].points.filter((p) => Number.isFinite(p[metric])).map((p) => ({ x: p.timesteps, y: p[metric] }));
    return { name: `${id.slice(0, 8)} (${jobName(job)}, seed ${job.params.seed})`, points, last: curves[i].points.at(-1) ?? {} };
  });
  const drawn = named.filter((s) => s.points.length);
  $("#compare-chart").replaceChildren(
    drawn.length ? linesChart(drawn, "Timesteps", curveTitle(metric)) : make("p", { class: "hint" }, "No curve yet: each run's curve starts when its first update ends."),
  );
  const table = make("table", { class: "terms compare-table" });
  table.append(make("caption", {}, "Latest metrics, run by run"));
  const head = make("tr");
  head.append(make("th", { scope: "col" }, "Metric"), ...named.map((s) => make("th", { scope: "col" }, s.name.slice(0, 8))));
  const thead = make("thead");
  thead.append(head);
  const body = make("tbody");
  const keys = [...new Set(named.flatMap((s) => Object.keys(s.last)))];
  for (const key of keys) {
    const row = make("tr");
    row.append(make("th", { scope: "row" }, curveTitle(key)));
    for (const s of named) {
      const value = s.last[key];
      row.append(make("td", {}, typeof value !== "number" ? "—" : Number.isInteger(value) ? String(value) : value.toFixed(4)));
    }
    body.append(row);
  }
  table.append(thead, body);
  $("#compare-table").replaceChildren(table);
}

function renderPolicies() {
  const select = $("#write-policy");
  const current = select.value;
  select.replaceChildren(make("option", { value: "" }, "None: the writer alone"));
  for (const job of state.jobs.filter((j) => isPolicy(j) && j.state === "succeeded")) {
    select.append(make("option", { value: job.id }, jobName(job)));
  }
  if ([...select.options].some((option) => option.value === current)) select.value = current;
  policyHint();
}

const chosenPolicy = () => state.jobs.find((j) => j.id === $("#write-policy").value);

function policyHint() {
  const job = chosenPolicy();
  $("#policy-hint").textContent = job
    ? `Job ${job.id.slice(0, 8)}, trained toward ${job.params.profile ?? "a custom target"}; it steers toward the profile chosen here.`
    : "Your finished training jobs (Train).";
}

/** Choosing a policy selects the profile it was trained toward (when listed), which can be changed. */
function policyChosen() {
  const toward = chosenPolicy()?.params.profile;
  const profile = $("#write-profile");
  if (toward && [...profile.options].some((option) => option.value === toward)) profile.value = toward;
  policyHint();
}

function renderCurve(points) {
  const metric = $("#curve-metric");
  const keys = [...new Set(points.flatMap((p) => Object.keys(p)))].filter(
    (k) => k !== "timesteps" && points.some((p) => Number.isFinite(p[k])), // a voice adapter's SFT steps have no episode reward
  );
  const chosen = metric.value || "episode_reward_mean";
  metric.replaceChildren(...keys.map((key) => make("option", { value: key }, curveTitle(key))));
  const fallback = keys.includes("episode_reward_mean") ? "episode_reward_mean" : keys.find((k) => /(^|_)loss$/.test(k)) ?? keys[0] ?? "";
  metric.value = keys.includes(chosen) ? chosen : fallback;
  metric.disabled = keys.length === 0;
  const line = points
    .filter((p) => Number.isFinite(p[metric.value]))
    .map((p) => ({ x: p.timesteps, y: p[metric.value] }));
  $("#job-chart").replaceChildren(
    line.length
      ? lineChart(line, "Timesteps", curveTitle(metric.value))
      : make("p", { class: "hint" }, "The curve starts when the first training update ends."),
  );
}

function renderJobMetrics(metrics) {
  const numbers = Object.entries(metrics).filter(([, value]) => typeof value === "number");
  if (!numbers.length) return $("#job-metrics").replaceChildren();
  const table = make("table", { class: "terms" });
  table.append(make("caption", {}, "Latest training metrics"));
  const body = make("tbody");
  for (const [key, value] of numbers) {
    const row = make("tr");
    row.append(make("th", { scope: "row" }, curveTitle(key)), make("td", {}, Number.isInteger(value) ? String(value) : value.toFixed(4)));
    body.append(row);
  }
  table.append(body);
  $("#job-metrics").replaceChildren(table);
}

async function showJob() {
  const curve = await call("GET", `/v1/jobs/${encodeURIComponent(state.job)}/metrics`);
  const job = state.jobs.find((j) => j.id === state.job);
  if (!job) return;
  Object.assign(job, { state: curve.state, progress: curve.progress });
  $("#job-title").textContent = `Job ${job.id.slice(0, 8)}: ${jobName(job)}`;
  const version = job.params.reward_model_version;
  $("#job-meta").textContent = [
    `seed ${job.params.seed}`,
    !isPolicy(job) ? "LoRA adapter of the server's SmolLM2" : version === null || version === undefined ? "no reward model" : `reward model version ${version}`,
    `queued ${new Date(job.created_at).toLocaleString()}`,
    job.attempts > 1 ? `${job.attempts} workers (resumed from a checkpoint)` : null,
  ]
    .filter(Boolean)
    .join(" · ");
  $("#job-progress").value = curve.progress;
  $("#job-status").textContent = jobStatus(job);
  state.curve = curve.points;
  renderCurve(curve.points);
  renderJobMetrics(job.metrics);
  $("#cancel-job").hidden = !ACTIVE.has(job.state);
  $("#use-policy").hidden = !(isPolicy(job) && job.state === "succeeded");
  serve.render(job, state.jobs);
  $("#job-detail").hidden = false;
}

async function selectJob(id) {
  state.job = id;
  renderJobs();
  try {
    await showJob();
  } catch (error) {
    showError(error);
  }
  watchJobs();
}

/** Poll while the Train screen is open and a job is still queued or running. */
function watchJobs() {
  clearTimeout(state.jobTimer);
  if ($("#panel-train").hidden || !state.jobs.some((j) => ACTIVE.has(j.state))) return;
  state.jobTimer = setTimeout(async () => {
    try {
      await loadJobs();
      if (state.job) await showJob();
      await compareRuns();
      watchJobs();
    } catch (error) {
      showError(error);
    }
  }, POLL_MS);
}

async function refreshJobs() {
  try {
    if (!$("#panel-train").hidden) await serve.refresh();
    await loadJobs();
    if (state.job && !$("#panel-train").hidden) await showJob();
    if (!$("#panel-train").hidden) await Promise.all([rewardModelChoice(), compareRuns()]);
    watchJobs();
  } catch (error) {
    showError(error);
  }
}

async function startJob(event) {
  event.preventDefault();
  const form = event.target;
  await submitting(form, async () => {
    const job = await call("POST", "/v1/train", {
      profile: form.profile.value,
      timesteps: Number(form.timesteps.value),
      seed: Number(form.seed.value),
      use_reward_model: form.reward_model.checked,
      reward: form.reward.value,
    });
    state.job = job.id;
    await loadJobs();
    await showJob();
    watchJobs();
    notify(`Training job ${job.id.slice(0, 8)} queued: its progress and learning curve follow below.`);
  });
}

async function cancelJob() {
  const job = state.jobs.find((j) => j.id === state.job);
  if (!job || !window.confirm(`Cancel training job ${job.id.slice(0, 8)}? It cannot be resumed.`)) return;
  try {
    await call("DELETE", `/v1/jobs/${encodeURIComponent(job.id)}`);
    await loadJobs();
    await showJob();
    notify(`Job ${job.id.slice(0, 8)} cancelled.`);
  } catch (error) {
    showError(error);
  }
}

function usePolicy() {
  showTab("write");
  $("#write-policy").value = state.job;
  policyChosen();
  $("#write-prompt").focus();
  notify("The policy is chosen: write an article with it.");
}

async function analyze(event) {
  event.preventDefault();
  const form = event.target;
  await submitting(form, async () => {
    const text = form.text.value;
    const scoreBody = { text, profile: form.profile.value };
    if (form.prompt.value.trim()) scoreBody.prompt = form.prompt.value.trim();
    await whenReady((message) => notify(message));
    clearMessages();
    const [score, analysis] = await Promise.all([
      call("POST", "/v1/score", scoreBody),
      call("POST", "/v1/analyze", { text, evidence: true }),
    ]);
    $("#evidence-text").replaceChildren(...highlight(text, analysis.evidence));
    renderMeasure($("#analyze-measure"), score.hrv, score.target_hrv, score);
    $("#refine-result").hidden = true;
    $("#analyze-result").hidden = false;
  });
}

function showDiff(segments) {
  const tags = { equal: "span", delete: "del", insert: "ins" };
  return segments.map(({ op, text }) => make(tags[op], op === "equal" ? {} : { class: `diff-${op}` }, text));
}

async function refine() {
  const form = $("#analyze-form");
  if (!form.reportValidity()) return;
  const button = $("#refine-button");
  button.disabled = true;
  form.setAttribute("aria-busy", "true");
  clearMessages();
  try {
    await whenReady((message) => notify(message));
    clearMessages();
    const result = await call("POST", "/v1/refine", { text: form.text.value, profile: form.profile.value });
    state.refined = result;
    $("#diff").replaceChildren(...showDiff(result.diff));
    const { before, after } = result;
    const count = result.suggestions.length;
    $("#refine-summary").textContent = count
      ? `${count} suggested edit${count === 1 ? "" : "s"}: with all of them, the reward goes ${before.reward.toFixed(3)} → ${after.reward.toFixed(3)} and the style match (resonance) ${before.resonance.toFixed(3)} → ${after.resonance.toFixed(3)}. Accept or reject each one below.`
      : "No edit closed the style gap without costing writing quality; the text is unchanged.";
    $("#suggestions").replaceChildren(...result.suggestions.map(suggestionItem));
    renderMeasure($("#refine-measure"), after.hrv, result.target_hrv, after);
    for (const part of ["#diff-legend", "#use-refined", "#suggestions"]) $(part).hidden = count === 0;
    $("#analyze-result").hidden = true;
    $("#refine-result").hidden = false;
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

/** One suggestion: what it does in words, why, the sentence before and after, and accept / reject. */
function suggestionItem(suggestion) {
  const item = make("li");
  const name = `suggestion-${suggestion.id}`;
  item.append(make("p", {}, `${suggestion.id + 1}. ${sentence(suggestion.label)} ${sentence(suggestion.reason)}`));
  const change = make("p", { class: "article" });
  change.append(make("del", { class: "diff-delete" }, suggestion.before), " → ", make("ins", { class: "diff-insert" }, suggestion.after));
  const choice = make("fieldset", { class: "choice" });
  choice.append(make("legend", { class: "visually-hidden" }, `Suggestion ${suggestion.id + 1}`));
  for (const [value, text] of [["accept", "Accept"], ["reject", "Reject"]]) {
    const input = make("input", { type: "radio", name, value, id: `${name}-${value}` });
    if (value === "accept") input.checked = true;
    const option = make("label", { for: `${name}-${value}` });
    option.append(input, ` ${text}`);
    choice.append(option);
  }
  item.append(change, choice);
  return item;
}

async function useRefined() {
  const refined = state.refined;
  const accept = refined.suggestions
    .filter((s) => document.querySelector(`input[name=suggestion-${s.id}]:checked`)?.value === "accept")
    .map((s) => s.id);
  try {
    const result = await call("POST", "/v1/refine/apply", { text: refined.original_text, suggestions: refined.suggestions, accept });
    $("#analyze-text").value = result.text;
    updateCounter($("#analyze-text"));
    $("#refine-result").hidden = true;
    const skipped = result.skipped.length
      ? ` Not applied: ${result.skipped.map((id) => id + 1).join(", ")} (each edits a sentence that a suggestion you rejected wrote).`
      : "";
    notify(`${result.applied.length} of ${refined.suggestions.length} suggestions applied; the text is in the text box: analyze or refine it again.${skipped}`);
  } catch (error) {
    showError(error);
  }
}

function legends() {
  for (const box of document.querySelectorAll(".legend")) {
    for (const [kind, title] of Object.entries(EVIDENCE_KINDS)) box.append(make("mark", { class: `ev-${kind}` }, title), " ");
  }
}

// -- start --------------------------------------------------------------------------------------

async function start() {
  const response = await fetch("/studio/definitions.json");
  ({ dimensions: state.dimensions, terms: state.terms, gap: state.gap, training: state.training } = await response.json());
  buildSliders();
  legends();
  const describeDimension = (name) => state.dimensions.find((d) => d.name === name).description;
  serve = servePanel({ make, showError });
  const steer = steerPanel({ make, namedHeading, showError, clearMessages, description: describeDimension }, () => state.article);
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", () => signOut());
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      clearMessages();
      showTab(button.dataset.tab);
      if (button.dataset.tab === "learn") loadRewardModel();
      if (button.dataset.tab === "steer") steer.open();
      if (button.dataset.tab === "write" || button.dataset.tab === "train") refreshJobs();
    });
  }
  for (const radio of document.querySelectorAll("input[name=source]")) radio.addEventListener("change", switchSource);
  $("#voice-files").addEventListener("change", addFiles);
  $("#create-form").addEventListener("submit", createProfile);
  $("#show-history").addEventListener("click", showHistory);
  $("#delete-profile").addEventListener("click", deleteProfile);
  $("#write-form").addEventListener("submit", write);
  $("#rate-form").addEventListener("submit", rate);
  $("#ab-form").addEventListener("submit", prefer);
  $("#train-form").addEventListener("submit", trainRewardModel);
  $("#analyze-form").addEventListener("submit", analyze);
  $("#refine-button").addEventListener("click", refine);
  $("#use-refined").addEventListener("click", useRefined);
  $("#job-form").addEventListener("submit", startJob);
  $("#cancel-job").addEventListener("click", cancelJob);
  $("#use-policy").addEventListener("click", usePolicy);
  $("#curve-metric").addEventListener("change", () => {
    renderCurve(state.curve);
    compareRuns().catch(showError);
  });
  const timesteps = $("#job-timesteps");
  Object.assign(timesteps, { min: state.training.update_steps, step: state.training.update_steps, value: 3 * state.training.update_steps });
  timesteps.addEventListener("input", checkTimesteps);
  checkTimesteps();
  renderRewards();
  $("#job-reward").addEventListener("change", rewardHint);
  $("#write-policy").addEventListener("change", policyChosen);
  for (const area of document.querySelectorAll("textarea[data-limit]")) area.addEventListener("input", () => updateCounter(area));
  refreshCounters();
  renderProfiles();
  renderPolicies();
  if (session.key()) {
    try {
      await loadProfiles();
      enterStudio();
    } catch (error) {
      showError(error);
    }
  }
  document.body.dataset.ready = "true";
  performance.mark("studio-ready");
}

start();
