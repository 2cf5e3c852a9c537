// Resonance Studio: sign in, profiles, write, analyze, rate, train; every call goes through api.js.

import { call, describe, sentence, session, stream } from "./api.js";
import { label, lineChart, radar } from "./charts.js";
import { highlight, EVIDENCE_KINDS } from "./evidence.js";

const BUILTIN_TEMPLATES = ["professional", "creative", "technical"];

const $ = (selector) => document.querySelector(selector);
const state = {
  dimensions: [],
  terms: [],
  profiles: [],
  selected: null,
  article: null,
  previous: null,
  refined: null,
  jobs: [],
  job: null,
  jobTimer: null,
  curve: [],
};

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

function gapTable(measured, target, caption = "Per-dimension gap (target − measured)") {
  const table = make("table", { class: "gaps" });
  table.append(make("caption", {}, caption));
  const head = make("tr");
  for (const title of ["Dimension", "Target", "Measured", "Gap"]) head.append(make("th", { scope: "col" }, title));
  const thead = make("thead");
  thead.append(head);
  table.append(thead);
  const body = make("tbody");
  for (const dimension of state.dimensions) {
    const gap = target[dimension.name] - measured[dimension.name];
    const row = make("tr");
    const name = make("th", { scope: "row", title: dimension.description }, label(dimension.name));
    row.append(name);
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
    row.append(make("th", { scope: "row", title: description }, label(name)));
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
    status.textContent = "Waiting for the writer…";
    $("#write-progress-box").hidden = false;
    const result = await stream("/v1/generate/stream", body, ({ paragraph, paragraphs }) => {
      bar.max = paragraphs;
      bar.value = paragraph - 1;
      status.textContent = `Writing paragraph ${paragraph} of ${paragraphs}…`;
    });
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
    notify(
      `Article written: reward ${result.reward.reward.toFixed(3)}, resonance ${result.reward.resonance.toFixed(3)}.${draftMode}`,
    );
    written = true;
  });
  if (!written) $("#write-progress-box").hidden = true;
  button.textContent = "Write article";
}

/** A paragraph's own measured dimensions against the article's target, folded under its largest gap. */
function paragraphNumbers(number, measured, target) {
  const gaps = state.dimensions.map((d) => [d, target[d.name] - measured[d.name]]);
  const [widest, gap] = gaps.reduce((a, b) => (Math.abs(b[1]) > Math.abs(a[1]) ? b : a));
  const details = make("details", { class: "numbers" });
  const sign = gap >= 0 ? "+" : "−";
  details.append(
    make("summary", {}, `Paragraph ${number} numbers (largest gap: ${label(widest.name)} ${sign}${Math.abs(gap).toFixed(2)})`),
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

function jobName(job) {
  const toward = job.params.profile ? job.params.profile.replace(/^builtin\//, "") : "a custom target";
  return `${toward}, ${Number(job.params.timesteps).toLocaleString("en")} steps`;
}

function jobStatus(job) {
  const total = Number(job.params.timesteps);
  const done = Math.round(job.progress * total);
  return {
    queued: "Waiting for a free worker…",
    starting: "Starting a worker…",
    running: `Training: ${done.toLocaleString("en")} of ${total.toLocaleString("en")} steps (${Math.round(job.progress * 100)}%).`,
    succeeded: "Finished: pick it as the trained policy on the Write screen.",
    failed: `Failed: ${job.error}`,
    cancelled: "Cancelled.",
  }[job.state];
}

async function loadJobs() {
  ({ jobs: state.jobs } = await call("GET", "/v1/jobs?kind=ppo"));
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
    button.append(
      make("span", {}, jobName(job)),
      make("span", { class: `state ${job.state}` }, `${job.state}${percent}`),
      make("span", { class: "meta" }, `job ${job.id.slice(0, 8)} · ${new Date(job.created_at).toLocaleString()}`),
    );
    button.addEventListener("click", () => selectJob(job.id));
    item.append(button);
    list.append(item);
  }
  $("#job-empty").hidden = state.jobs.length > 0;
}

function renderPolicies() {
  const select = $("#write-policy");
  const current = select.value;
  select.replaceChildren(make("option", { value: "" }, "None: the writer alone"));
  for (const job of state.jobs.filter((j) => j.state === "succeeded")) {
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
  const keys = [...new Set(points.flatMap((p) => Object.keys(p)))].filter((k) => k !== "timesteps");
  const chosen = metric.value || "episode_reward_mean";
  metric.replaceChildren(...keys.map((key) => make("option", { value: key }, curveTitle(key))));
  metric.value = keys.includes(chosen) ? chosen : keys[0] ?? "";
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
    version === null || version === undefined ? "no reward model" : `reward model version ${version}`,
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
  $("#use-policy").hidden = job.state !== "succeeded";
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
      watchJobs();
    } catch (error) {
      showError(error);
    }
  }, POLL_MS);
}

async function refreshJobs() {
  try {
    await loadJobs();
    if (state.job && !$("#panel-train").hidden) await showJob();
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
    const result = await call("POST", "/v1/refine", { text: form.text.value, profile: form.profile.value });
    state.refined = result.text;
    $("#diff").replaceChildren(...showDiff(result.diff));
    const { before, after } = result;
    const count = result.edits.length;
    $("#refine-summary").textContent = count
      ? `${count} edit${count === 1 ? "" : "s"} kept (${result.edits.join(", ")}): reward ${before.reward.toFixed(3)} → ${after.reward.toFixed(3)}, resonance ${before.resonance.toFixed(3)} → ${after.resonance.toFixed(3)}.`
      : "No edit closed the style gap without costing writing quality; the text is unchanged.";
    renderMeasure($("#refine-measure"), after.hrv, result.target_hrv, after);
    for (const part of ["#diff-legend", "#use-refined"]) $(part).hidden = count === 0;
    $("#analyze-result").hidden = true;
    $("#refine-result").hidden = false;
  } catch (error) {
    showError(error);
  } finally {
    button.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

function useRefined() {
  $("#analyze-text").value = state.refined;
  updateCounter($("#analyze-text"));
  $("#refine-result").hidden = true;
  notify("The edited text is in the text box; analyze or refine it again.");
}

function legends() {
  for (const box of document.querySelectorAll(".legend")) {
    for (const [kind, title] of Object.entries(EVIDENCE_KINDS)) box.append(make("mark", { class: `ev-${kind}` }, title), " ");
  }
}

// -- start --------------------------------------------------------------------------------------

async function start() {
  const response = await fetch("/studio/definitions.json");
  ({ dimensions: state.dimensions, terms: state.terms } = await response.json());
  buildSliders();
  legends();
  $("#sign-in-form").addEventListener("submit", signIn);
  $("#sign-out").addEventListener("click", () => signOut());
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => {
      clearMessages();
      showTab(button.dataset.tab);
      if (button.dataset.tab === "learn") loadRewardModel();
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
  $("#curve-metric").addEventListener("change", () => renderCurve(state.curve));
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
