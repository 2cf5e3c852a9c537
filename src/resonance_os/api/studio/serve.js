// Serve: a finished job whose result is a language-model adapter (its metrics name `served_path`, the
// folder it was published to under the tenant's runs folder) is served through the OpenAI API
// (POST /v1/adapters) under a model id the writer picks; what is served (GET /v1/adapters) shows its id,
// an `openai` SDK snippet and a curl line, and "Stop serving" (DELETE /v1/adapters/{name}).

import { call, describe, sentence } from "./api.js";

const $ = (selector) => document.querySelector(selector);
const NAME_MAX = 64;
const NAME_SUFFIX = "-voice";
const KEY_VARIABLE = "RESONANCE_API_KEY";
const PROMPT = "Write the opening paragraph of a post about bread.";

/** The run folder a job's language-model adapter was published to, or null (not finished, or not an LM adapter). */
export const servedPath = (job) => (job.state === "succeeded" && typeof job.metrics?.served_path === "string" ? job.metrics.served_path : null);

/** A model id valid for POST /v1/adapters (a letter or digit, then letters, digits, '.', '_', '-'; at most 64). */
function validName(text, suffix) {
  const stem = text.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return stem ? `${stem.slice(0, NAME_MAX - suffix.length)}${suffix}` : null;
}

/** Sentences for a failed serve or stop: what the server said, and what to do about it. */
function problem(error) {
  const detail = sentence(error.message);
  if (error.status === 400) return `Not served (400). ${detail}`;
  if (error.status === 503) return `The server's language model is not available (503). ${detail} Ask whoever runs the service to install it.`;
  return describe(error);
}

/** The Train screen's serve box for the chosen job; `ui` lends the page's helpers (make, showError). */
export function servePanel(ui) {
  const state = { adapters: [], failed: null, busy: false, shown: null, status: "" };
  const make = ui.make;

  const servedAs = (path) => state.adapters.filter((model) => model.path === path);

  /** The newer finished job that published to the same folder (and so replaced this job's adapter), if any. */
  function replacedBy(job, jobs) {
    const path = servedPath(job);
    const finished = Date.parse(job.finished_at);
    return jobs.find((other) => other !== job && servedPath(other) === path && Date.parse(other.finished_at) > finished) ?? null;
  }

  function defaultName(job) {
    const profile = job.params.profile ?? "";
    const plain = validName(profile, NAME_SUFFIX) ?? `adapter-${job.id.slice(0, 8)}`;
    const taken = state.adapters.some((model) => model.id === plain);
    return taken ? validName(profile, `${NAME_SUFFIX}-${job.id.slice(0, 8)}`) ?? `adapter-${job.id}` : plain;
  }

  function snippet(title, code) {
    const figure = make("figure", { class: "snippet" });
    const caption = make("figcaption", {}, title);
    const copy = make("button", { type: "button", class: "quiet copy" }, "Copy");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(code);
        copy.textContent = "Copied";
      } catch {
        copy.textContent = "Select the text and copy it";
      }
    });
    caption.append(copy);
    figure.append(caption, make("pre", {}, code));
    return figure;
  }

  function servedView(model, job) {
    const base = `${location.origin}/v1`;
    const box = make("div", { class: "served" });
    const line = make("p");
    line.append("Served as model ", make("code", { class: "model-id" }, model.id), ` (version ${model.version}), at `, make("code", {}, base), ".");
    const python = [
      "import os",
      "",
      "from openai import OpenAI",
      "",
      `client = OpenAI(base_url="${base}", api_key=os.environ["${KEY_VARIABLE}"])`,
      "reply = client.chat.completions.create(",
      `    model="${model.id}",`,
      `    messages=[{"role": "user", "content": "${PROMPT}"}],`,
      "    max_tokens=200,",
      ")",
      "print(reply.choices[0].message.content)",
    ].join("\n");
    const body = JSON.stringify({ model: model.id, messages: [{ role: "user", content: PROMPT }], max_tokens: 200 });
    const curl = `curl ${base}/chat/completions -H "Authorization: Bearer $${KEY_VARIABLE}" -H "Content-Type: application/json" -d '${body}'`;
    const stop = make("button", { type: "button", class: "danger stop-serving" }, `Stop serving ${model.id}`);
    stop.addEventListener("click", () =>
      act(job, stop, () => call("DELETE", `/v1/adapters/${encodeURIComponent(model.id)}`), {
        doing: `Stopping ${model.id}…`,
        done: () => `Stopped serving ${model.id}: a request for it is now answered 404 (model_not_found).`,
      }),
    );
    box.append(line);
    if (Date.parse(job.finished_at) > model.updated * 1000) box.append(staleWeights(model, job));
    box.append(
      make("p", { class: "hint" }, `Put the API key you signed in with in ${KEY_VARIABLE}, then call it from any OpenAI client:`),
      snippet("Python, the openai SDK", python),
      snippet("curl", curl),
      stop,
    );
    return box;
  }

  /** The job finished after `model` was served from its folder: the server may still answer with the earlier
   * training's weights until they are replaced (POST /v1/adapters with replace: true). */
  function staleWeights(model, job) {
    const note = make("div", { class: "stale" });
    const replace = make("button", { type: "button", class: "replace-weights" }, "Serve the new weights");
    replace.addEventListener("click", () =>
      act(job, replace, () => call("POST", "/v1/adapters", { name: model.id, path: model.path, replace: true }), {
        doing: `Loading this training's weights into ${model.id}…`,
        done: (reply) => `${reply.id} now answers with this training's weights (version ${reply.version}), from the next request.`,
      }),
    );
    note.append(
      make("p", { class: "serve-warning" }, `This training finished after ${model.id} was served, so ${model.id} may still answer with the earlier training's weights.`),
      replace,
    );
    return note;
  }

  function serveForm(job, path) {
    const form = make("form", { class: "serve-form" });
    const input = make("input", {
      id: "serve-name", name: "name", required: "", maxlength: String(NAME_MAX), pattern: "[A-Za-z0-9][A-Za-z0-9._\\-]*",
      spellcheck: "false", "aria-describedby": "serve-name-hint",
    });
    input.value = defaultName(job);
    const button = make("button", { type: "submit", id: "serve-button" }, "Serve this policy");
    form.append(
      make("label", { for: "serve-name" }, "Model name"),
      input,
      make("p", { id: "serve-name-hint", class: "hint" }, `The model id clients will ask for: a letter or digit, then letters, digits, '.', '_' or '-'; at most ${NAME_MAX}. Served from ${path}.`),
      button,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!form.reportValidity()) return;
      act(job, button, () => call("POST", "/v1/adapters", { name: input.value, path }), {
        doing: "Loading the adapter into the server's model (the model itself loads first if nothing has used it yet)…",
        done: (model) => `Serving ${model.id}: call it with the snippets below.`,
      });
    });
    return form;
  }

  /** Serve or stop: `button` disabled while `request` runs (`doing` said meanwhile, `done(reply)` after);
   * the server's error is shown in words next to it. */
  async function act(job, button, request, { doing, done }) {
    state.busy = true;
    button.disabled = true;
    $("#serve-error").hidden = true;
    $("#serve-status").textContent = doing;
    try {
      const reply = await request();
      await refresh();
      state.status = done(reply);
      state.busy = false;
      render(job, null, true);
    } catch (error) {
      state.busy = false;
      button.disabled = false;
      $("#serve-status").textContent = "";
      if (error.status === 401) return ui.showError(error);
      $("#serve-error").textContent = problem(error);
      $("#serve-error").hidden = false;
    }
  }

  let lastJobs = [];

  /** Show the serve box for `job` (`jobs`: all listed; null keeps the last list). Redrawn only when what it
   * shows changed, so a name being typed survives the page's polling. */
  function render(job, jobs, force = false) {
    if (jobs) lastJobs = jobs;
    const box = $("#job-serve");
    const path = servedPath(job);
    const newer = path ? replacedBy(job, lastJobs) : null;
    const served = path && !newer ? servedAs(path) : [];
    const key = JSON.stringify([job.id, job.state, path, newer?.id, served.map((m) => [m.id, m.version, m.updated]), state.failed?.message]);
    if (state.busy || (!force && key === state.shown)) return;
    if (state.shown && JSON.parse(state.shown)[0] !== job.id) state.status = "";
    state.shown = key;
    const parts = [];
    if (job.kind === "ppo" && job.state === "succeeded") {
      parts.push(make("p", { class: "hint not-servable" }, "This policy revises the writer's drafts (edits chosen toward the profile); it is not a language model, so it is not served through the OpenAI API. Pick it as the trained policy on the Write screen."));
    } else if (job.kind === "voice_adapter" && !path) {
      parts.push(make("p", { class: "hint" }, job.state === "succeeded" ? "This adapter was not published for serving." : "Once it has finished, this adapter can be served through the OpenAI API here."));
    } else if (newer) {
      parts.push(make("p", { class: "hint" }, `A later training of this adapter (job ${newer.id.slice(0, 8)}) replaced it in ${path}: serve that job instead.`));
    } else if (path) {
      parts.push(make("h4", {}, "Serve through the OpenAI API"));
      if (state.failed) parts.push(make("p", { class: "serve-warning", role: "alert" }, `What is served could not be read: ${problem(state.failed)}`));
      parts.push(...(served.length ? served.map((model) => servedView(model, job)) : [serveForm(job, path)]));
    }
    if (parts.length && path && !newer) {
      parts.push(make("p", { id: "serve-error", class: "serve-error", role: "alert", hidden: "" }), make("p", { id: "serve-status", class: "hint", role: "status", "aria-live": "polite" }, state.status));
    }
    box.replaceChildren(...parts);
    box.hidden = parts.length === 0;
  }

  /** Read what the tenant serves (GET /v1/adapters); a failure is kept and shown in the serve box. */
  async function refresh() {
    try {
      state.adapters = (await call("GET", "/v1/adapters")).data;
      state.failed = null;
    } catch (error) {
      if (error.status === 401) throw error;
      state.failed = error;
    }
  }

  return {
    refresh,
    render,
    /** The model ids a job's adapter is served as (none for a job whose adapter is not an LM adapter or was replaced). */
    servedAs(job, jobs) {
      const path = servedPath(job);
      return path && !replacedBy(job, jobs) ? servedAs(path).map((model) => model.id) : [];
    },
    reset() {
      state.adapters = [];
      state.shown = null;
      state.status = "";
    },
  };
}
