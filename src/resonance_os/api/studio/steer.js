// Steer: sliders for the dimensions the local model can be steered along; each move rewrites the paragraph
// (POST /v1/steer), debounced, one request in flight, replies to anything but the latest request dropped.

import { call } from "./api.js";
import { label } from "./charts.js";

const DEBOUNCE_MS = 350;
const $ = (selector) => document.querySelector(selector);
const signed = (value, digits = 2) => `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(digits)}`;

/**
 * Runs `work(request)` for the latest request only: `want(request)` starts it `delay` ms after the last
 * call; while one runs, later wants wait for it and then only the newest is sent; a reply (or error) to a
 * request that is no longer the latest is dropped, never shown.
 */
export class LatestOnly {
  constructor(work, { show, fail, busy, delay = DEBOUNCE_MS }) {
    Object.assign(this, { work, show, fail, busy, delay });
    this.wanted = 0;
    this.sent = 0;
    this.running = false;
    this.timer = null;
  }

  want(request) {
    this.request = request;
    this.wanted += 1;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.pump();
    }, this.delay);
  }

  async pump() {
    if (this.running || this.sent === this.wanted) return;
    const number = (this.sent = this.wanted);
    const request = this.request;
    this.running = true;
    this.busy(true, request);
    try {
      const reply = await this.work(request);
      if (number === this.wanted) this.show(reply, request);
    } catch (error) {
      if (number === this.wanted) this.fail(error);
    } finally {
      this.running = false;
      if (this.sent !== this.wanted && this.timer === null) this.pump();
      else this.busy(this.timer !== null, null);
    }
  }
}

/** The Steer panel; `ui` lends the page's helpers (make, namedHeading, showError, clearMessages) and
 * `article()` (the article written last, or null). */
export function steerPanel(ui, article) {
  const state = { report: null, baseline: null };
  const sliders = new Map();

  const current = () => ({
    paragraph: $("#steer-paragraph").value,
    seed: Number($("#steer-seed").value || 0),
    steer: Object.fromEntries([...sliders].map(([name, input]) => [name, Number(input.value)])),
  });
  const sameText = (a, b) => a && b && a.paragraph === b.paragraph && a.seed === b.seed;
  const isZero = (steer) => Object.values(steer).every((s) => s === 0);

  const rewrites = new LatestOnly((request) => call("POST", "/v1/steer", request), {
    busy(on, request) {
      $("#steer-panel-body").setAttribute("aria-busy", String(on));
      if (on && request) $("#steer-status").textContent = `Rewriting (${describeSteer(request.steer)})…`;
    },
    show(reply, request) {
      ui.clearMessages();
      if (isZero(request.steer)) state.baseline = { ...request, hrv: reply.hrv };
      $("#steer-text").textContent = reply.text;
      $("#steer-result").hidden = false;
      $("#steer-status").textContent = `Rewritten with ${describeSteer(reply.steer)} in ${(reply.seconds).toFixed(1)} s of model time (seed ${reply.seed}).`;
      $("#steer-change").replaceChildren(changeTable(reply, sameText(state.baseline, request) ? state.baseline.hrv : null));
    },
    fail(error) {
      $("#steer-status").textContent = "The last rewrite failed; the text above is from the one before.";
      ui.showError(error);
    },
  });

  function describeSteer(steer) {
    const on = Object.entries(steer).filter(([, s]) => s !== 0);
    return on.length ? on.map(([name, s]) => `${label(name)} ${signed(s)}`).join(", ") : "no steering (all 0)";
  }

  function changeTable(reply, baseline) {
    const table = ui.make("table", { class: "gaps steer-change" });
    const caption = ui.make("caption", {}, "Measured HRV: your paragraph and the rewrite");
    caption.append(ui.make("span", { class: "meaning" }, "Change = rewrite − your paragraph. A rewrite moves some dimensions even unsteered; compare with the 0 column (the unsteered rewrite, same seed) to see what the steering did."));
    table.append(caption);
    const head = ui.make("tr");
    for (const title of ["Dimension", "Steer", "Your paragraph", "At 0", "Rewrite", "Change"]) head.append(ui.make("th", { scope: "col" }, title));
    const thead = ui.make("thead");
    thead.append(head);
    const body = ui.make("tbody");
    for (const dimension of state.report.dimensions) {
      const before = reply.original_hrv[dimension.name];
      const after = reply.hrv[dimension.name];
      const strength = reply.steer[dimension.name] ?? 0;
      const row = ui.make("tr", strength !== 0 ? { class: "steered" } : {});
      row.append(ui.namedHeading(dimension.name, ui.description(dimension.name)));
      row.append(ui.make("td", {}, dimension.steerable ? signed(strength) : "—"));
      row.append(ui.make("td", {}, before.toFixed(2)));
      row.append(ui.make("td", {}, baseline ? baseline[dimension.name].toFixed(2) : "—"));
      row.append(ui.make("td", {}, after.toFixed(2)));
      row.append(ui.make("td", { class: "change" }, signed(after - before)));
      body.append(row);
    }
    table.append(thead, body);
    return table;
  }

  function heldOut(dimension) {
    const { strengths } = state.report;
    const points = dimension.curve.map((v, i) => `${v.toFixed(2)} at ${signed(strengths[i], 1)}`).join(", ");
    const [low, high] = dimension.works_within;
    const fluency = Object.entries(dimension.fluency_ratio).map(([at, r]) => `${Math.round(r * 100)}% at ${at}`).join(", ");
    return (
      `Held out: measured ${points} (rho ${dimension.rho.toFixed(2)}). ` +
      `It moves one way and reads fluently from ${signed(low, 1)} to ${signed(high, 1)}, the slider's range; judged fluency ${fluency} of unsteered.`
    );
  }

  function build(report) {
    state.report = report;
    const box = $("#steer-sliders");
    const off = $("#steer-off");
    box.replaceChildren();
    off.replaceChildren();
    sliders.clear();
    $("#steer-unavailable").hidden = report.available;
    $("#steer-unavailable").textContent = report.reason ?? "";
    for (const dimension of report.dimensions) {
      if (!dimension.steerable) {
        const item = ui.make("li");
        item.append(ui.make("strong", {}, label(dimension.name)), `: ${report.available ? "not steerable: " : ""}${dimension.reason}`);
        if (report.available) off.append(item);
        continue;
      }
      const id = `steer-${dimension.name}`;
      const row = ui.make("div", { class: "slider" });
      row.append(ui.make("label", { for: id }, label(dimension.name)));
      // the slider spans the held-out range where the knob moves its dimension and stays fluent
      const [low, high] = dimension.works_within ?? [-1, 1];
      const input = ui.make("input", { id, type: "range", min: String(low), max: String(high), step: "0.05", value: "0", "aria-describedby": `${id}-hint` });
      const output = ui.make("output", { for: id }, signed(0));
      input.addEventListener("input", () => {
        output.textContent = signed(Number(input.value));
        want();
      });
      const hint = ui.make("p", { id: `${id}-hint`, class: "hint" }, `${ui.description(dimension.name)} ${dimension.curve ? heldOut(dimension) : ""}`);
      row.append(input, output, hint);
      box.append(row);
      sliders.set(dimension.name, input);
    }
    $("#steer-off-box").hidden = !off.children.length;
    $("#steer-controls").hidden = !report.available;
    if (report.heldout_prompts.length) $("#steer-heldout").textContent = `Held-out figures: ${report.heldout_prompts.length} topics the directions were never built on (${report.heldout_prompts.join("; ")}), one reply each at −1, −0.5, 0, +0.5, +1.`;
  }

  function want() {
    if (!state.report?.available) return;
    const request = current();
    if (!request.paragraph.trim()) {
      $("#steer-status").textContent = "Paste a paragraph to steer.";
      return;
    }
    rewrites.want(request);
  }

  function useArticle() {
    const written = article();
    if (!written) return;
    $("#steer-paragraph").value = written.paragraphs[0];
    $("#steer-paragraph").dispatchEvent(new Event("input"));
    want();
  }

  function reset() {
    for (const [, input] of sliders) {
      input.value = "0";
      input.dispatchEvent(new Event("input"));
    }
  }

  $("#steer-paragraph").addEventListener("change", want);
  $("#steer-seed").addEventListener("change", want);
  $("#steer-from-article").addEventListener("click", useArticle);
  $("#steer-reset").addEventListener("click", reset);
  $("#steer-form").addEventListener("submit", (event) => {
    event.preventDefault();
    want();
  });

  return {
    /** Called when the tab opens: list the dimensions once, offer the last article's paragraph. */
    async open() {
      $("#steer-from-article").hidden = !article();
      if (!state.report) {
        try {
          build(await call("GET", "/v1/steer/dimensions"));
        } catch (error) {
          ui.showError(error);
          return;
        }
      }
      if (state.report.available && !$("#steer-paragraph").value && article()) useArticle();
    },
  };
}
