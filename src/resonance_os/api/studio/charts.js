// Hand-drawn SVG charts: a radar of the 8 HRV dimensions (0..1 on every axis).

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
