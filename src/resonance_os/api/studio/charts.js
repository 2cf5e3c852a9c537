// Hand-drawn SVG charts: a radar of the 8 HRV dimensions (0..1 on every axis) and a line chart (a
// training job's learning curve).

const SVG = "http://www.w3.org/2000/svg";

function el(name, attributes = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (parent) parent.append(node);
  return node;
}

export function label(name) {
  const text = name.replace(/_/g, " ");
  return text[0].toUpperCase() + text.slice(1);
}

/**
 * A radar chart of `series` ([{name, values: {dimension: value}, kind}]) over `dimensions`
 * ([{name, description}]); each axis label carries its definition as a hover title.
 */
export function radar(dimensions, series) {
  const radius = 100;
  const svg = el("svg", { viewBox: "-250 -135 500 270", class: "radar", role: "img" });
  const summary = series
    .map((s) => `${s.name}: ` + dimensions.map((d) => `${label(d.name)} ${s.values[d.name].toFixed(2)}`).join(", "))
    .join("; ");
  el("title", {}, svg).textContent = `Radar chart. ${summary}`;
  const angle = (i) => (Math.PI * 2 * i) / dimensions.length - Math.PI / 2;
  const point = (i, value) => [Math.cos(angle(i)) * radius * value, Math.sin(angle(i)) * radius * value];

  for (const ring of [0.25, 0.5, 0.75, 1]) {
    const points = dimensions.map((_, i) => point(i, ring).join(",")).join(" ");
    el("polygon", { points, class: "ring" }, svg);
  }
  dimensions.forEach((dimension, i) => {
    const [x, y] = point(i, 1);
    el("line", { x1: 0, y1: 0, x2: x, y2: y, class: "axis" }, svg);
    const [lx, ly] = point(i, 1.12);
    const anchor = Math.abs(lx) < 5 ? "middle" : lx > 0 ? "start" : "end";
    const group = el("g", { class: "axis-label" }, svg);
    el("title", {}, group).textContent = `${label(dimension.name)}: ${dimension.description}`;
    const text = el("text", { x: lx, y: ly + 4, "text-anchor": anchor }, group);
    text.textContent = label(dimension.name);
  });
  for (const s of series) {
    const points = dimensions.map((d, i) => point(i, Math.min(1, Math.max(0, s.values[d.name]))).join(",")).join(" ");
    el("polygon", { points, class: `series ${s.kind}` }, svg);
  }

  const figure = document.createElement("figure");
  figure.className = "radar-figure";
  figure.append(svg);
  const legend = document.createElement("figcaption");
  for (const s of series) {
    const item = document.createElement("span");
    item.className = `key ${s.kind}`;
    item.textContent = s.name;
    legend.append(item);
  }
  figure.append(legend);
  return figure;
}

/** About `count` round tick values covering [low, high]. */
function ticks(low, high, count = 4) {
  if (low === high) return [low];
  const raw = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const values = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) values.push(Number(v.toPrecision(12)));
  return values;
}

function format(value) {
  const size = Math.abs(value);
  if (size >= 1000 && value % 100 === 0) return `${value / 1000}k`;
  if (size >= 100 || Number.isInteger(value)) return String(Math.round(value));
  return value.toPrecision(3).replace(/\.?0+$/, "");
}

/**
 * A line chart of `points` ([{x, y}], in order) with axis titles `xTitle` and `yTitle`: round ticks on
 * both axes, one polyline, a dot per point with its values as a hover title, and a text alternative.
 */
export function lineChart(points, xTitle, yTitle) {
  return linesChart([{ name: null, points }], xTitle, yTitle);
}

/** One series' text alternative: its points, first and last values, lowest and highest. */
function describeSeries({ name, points }) {
  const ys = points.map((p) => p.y);
  const [first, last] = [points[0], points[points.length - 1]];
  return (
    `${name ? `${name}: ` : ""}${points.length} points, from ${format(first.y)} at ${format(first.x)} ` +
    `to ${format(last.y)} at ${format(last.x)} (lowest ${format(Math.min(...ys))}, highest ${format(Math.max(...ys))})`
  );
}

/**
 * `lineChart` for several named series ([{name, points}], each with points), one line and colour each
 * (`series-0`, `series-1`, ...) on shared axes, with a legend when named: runs side by side.
 */
export function linesChart(series, xTitle, yTitle) {
  const [width, height, left, right, top, bottom] = [520, 270, 70, 20, 14, 48];
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, class: "line-chart", role: "img" });
  el("title", {}, svg).textContent = `Line chart of ${yTitle} by ${xTitle}: ${series.map(describeSeries).join("; ")}.`;
  const points = series.flatMap((s) => s.points);
  const ys = points.map((p) => p.y);
  const xs = points.map((p) => p.x);
  let [xLow, xHigh] = [Math.min(0, ...xs), Math.max(...xs)];
  let [yLow, yHigh] = [Math.min(...ys), Math.max(...ys)];
  if (xLow === xHigh) xHigh = xLow + 1;
  if (yLow === yHigh) [yLow, yHigh] = [yLow - 0.5, yHigh + 0.5];
  const yPad = (yHigh - yLow) * 0.05;
  [yLow, yHigh] = [yLow - yPad, yHigh + yPad];
  const px = (x) => left + ((x - xLow) / (xHigh - xLow)) * (width - left - right);
  const py = (y) => top + (1 - (y - yLow) / (yHigh - yLow)) * (height - top - bottom);

  for (const y of ticks(yLow, yHigh)) {
    el("line", { x1: left, x2: width - right, y1: py(y), y2: py(y), class: "grid" }, svg);
    el("text", { x: left - 6, y: py(y) + 4, "text-anchor": "end", class: "tick" }, svg).textContent = format(y);
  }
  for (const x of ticks(xLow, xHigh)) {
    el("line", { x1: px(x), x2: px(x), y1: height - bottom, y2: height - bottom + 5, class: "axis" }, svg);
    el("text", { x: px(x), y: height - bottom + 18, "text-anchor": "middle", class: "tick" }, svg).textContent = format(x);
  }
  el("line", { x1: left, x2: width - right, y1: height - bottom, y2: height - bottom, class: "axis" }, svg);
  el("line", { x1: left, x2: left, y1: top, y2: height - bottom, class: "axis" }, svg);
  el("text", { x: (left + width - right) / 2, y: height - 6, "text-anchor": "middle", class: "axis-title" }, svg).textContent = xTitle;
  const yLabel = el("text", { x: 0, y: 0, "text-anchor": "middle", class: "axis-title", transform: `translate(14 ${(top + height - bottom) / 2}) rotate(-90)` }, svg);
  yLabel.textContent = yTitle;

  series.forEach(({ name, points: line }, index) => {
    const group = el("g", { class: `series-${index}` }, svg);
    el("polyline", { points: line.map((p) => `${px(p.x)},${py(p.y)}`).join(" "), class: "curve" }, group);
    for (const p of line) {
      const dot = el("circle", { cx: px(p.x), cy: py(p.y), r: line.length > 60 ? 1.5 : 3, class: "dot" }, group);
      el("title", {}, dot).textContent = `${name ? `${name}: ` : ""}${xTitle} ${format(p.x)}: ${yTitle} ${format(p.y)}`;
    }
  });
  const figure = document.createElement("figure");
  figure.className = "line-figure";
  figure.append(svg);
  if (series.some((s) => s.name)) {
    const legend = document.createElement("figcaption");
    series.forEach(({ name }, index) => {
      const key = document.createElement("span");
      key.className = `key series-${index}`;
      key.textContent = name;
      legend.append(key);
    });
    figure.append(legend);
  }
  return figure;
}
