"use strict";
// The one roofline chart of every page (analyze, profile, compare, training): log axes with one
// tick format, the roofs of the precisions the model runs in (the others behind a toggle), the
// HBM slope and, where measured, the L2 slope, and a legend whose swatches are the strokes.
// Callers draw their own points with the scales it returns.
window.rooflensRoofline = function (box, legend, o) {
  const { el, h, si, apart } = window.rooflensDom;
  const W = 900, H = o.height || 480, L = 96, B = 40, Tm = 14, Rm = 170;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", id: o.id }, box);
  // Roofs of one device, units of one rate on one line ("tensor bf16/fp16"); `used`: a unit the
  // model's nodes run on (all of them when no node names one).
  const roofsOf = (d) => {
    const all = [];
    for (const k in d.tensor_flops) all.push({ unit: "tensor " + k, rate: d.tensor_flops[k] });
    for (const k in d.cuda_core_flops) all.push({ unit: "cuda " + k, rate: d.cuda_core_flops[k] });
    const any = all.some((r) => o.units.has(r.unit));
    const byRate = new Map();
    for (const r of all) byRate.set(r.rate, (byRate.get(r.rate) || []).concat([r.unit]));
    return [...byRate.entries()].sort((x, y) => y[0] - x[0]).map(([rate, units]) => {
      const kinds = new Map();
      for (const u of units) { const [k, p] = u.split(" "); kinds.set(k, (kinds.get(k) || []).concat([p])); }
      const name = [...kinds.entries()].map(([k, ps]) => (k === "cuda" ? "CUDA " : "tensor ") + ps.join("/")).join(", ");
      return { name, rate, used: !any || units.some((u) => o.units.has(u)) };
    });
  };
  const sets = [{ d: o.device, cls: "" }];
  if (o.spec) sets.push({ d: o.spec, cls: "spec" });
  let ymax = 0;
  for (const s of sets) for (const r of roofsOf(s.d)) if (r.used) ymax = Math.max(ymax, r.rate);
  let ymin = ymax / 1e6, xmin = 1e-2, xmax = 1e4;
  for (const p of o.extent) {
    if (p.ai > 0) { xmin = Math.min(xmin, p.ai / 2); xmax = Math.max(xmax, p.ai * 2); }
    if (p.perf > 0) ymin = Math.min(ymin, p.perf / 2);
  }
  ymin = Math.max(ymin, ymax / 1e9);
  const top = ymax * 2.2;  // room for the roofs of other precisions when shown (fp8: twice bf16)
  const lx = (x) => L + (Math.log10(x) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin)) * (W - L - Rm);
  const ly = (y) => H - B - (Math.log10(Math.min(y, top)) - Math.log10(ymin)) / (Math.log10(top) - Math.log10(ymin)) * (H - B - Tm);
  const gx = el("g", { class: "grid" }, svg), ax = el("g", { class: "axis" }, svg);
  for (let e = Math.ceil(Math.log10(xmin)); e <= Math.floor(Math.log10(xmax)); e++) {
    el("line", { x1: lx(10 ** e), x2: lx(10 ** e), y1: Tm, y2: H - B }, gx);
    el("text", { x: lx(10 ** e), y: H - B + 14, "text-anchor": "middle" }, ax).textContent = e < 0 ? (10 ** e).toFixed(-e) : si(10 ** e, "").trim();
  }
  for (let e = Math.ceil(Math.log10(ymin)); e <= Math.floor(Math.log10(top)); e++) {
    el("line", { x1: L, x2: W - Rm, y1: ly(10 ** e), y2: ly(10 ** e) }, gx);
    el("text", { x: L - 6, y: ly(10 ** e) + 4, "text-anchor": "end" }, ax).textContent = si(10 ** e, "FLOP/s");
  }
  el("text", { x: (L + W - Rm) / 2, y: H - 6, "text-anchor": "middle" }, ax).textContent = o.xlabel || "arithmetic intensity (FLOP/byte)";
  // Roof colours: none of the points' blue, orange, grey or purple.
  const colors = ["#2b8a3e", "#0b7285", "#c2255c", "#74b816", "#8d5524", "#343a40"];
  const memColor = "#5c5f66", legendRows = [], labels = [];
  let others = 0;
  sets.forEach((s, setIndex) => {
    const roofs = roofsOf(s.d), bw = s.d.hbm_bandwidth;
    const topRidge = Math.max(...roofs.filter((r) => r.used).map((r) => r.rate / bw));
    // The memory roof once, up to the highest ridge in use; each compute roof flat from its ridge.
    el("line", { class: "roof " + s.cls, stroke: memColor, x1: lx(xmin), y1: ly(Math.max(ymin, xmin * bw)),
      x2: lx(Math.min(xmax, topRidge)), y2: ly(Math.min(ymax, xmax * bw, topRidge * bw)) }, svg);
    if (s.d.l2_bandwidth)
      el("line", { class: "roof l2 " + s.cls, stroke: memColor, x1: lx(xmin), y1: ly(Math.max(ymin, xmin * s.d.l2_bandwidth)),
        x2: lx(Math.min(xmax, ymax / s.d.l2_bandwidth)), y2: ly(Math.min(ymax, xmax * s.d.l2_bandwidth)) }, svg);
    roofs.forEach((r, i) => {
      const ridge = r.rate / bw, c = colors[i % colors.length], other = r.used ? "" : " other";
      others += r.used ? 0 : 1;
      el("line", { class: "roof " + s.cls + other, stroke: c, x1: lx(Math.max(xmin, Math.min(xmax, ridge))), y1: ly(r.rate), x2: lx(xmax), y2: ly(r.rate) }, svg);
      if (setIndex === 0) {
        labels.push({ color: c, y: ly(r.rate) + 4, label: `${r.name} ${si(r.rate, "FLOP/s")}`, other });
        legendRows.push({ color: c, other, text: `${r.name}: ${si(r.rate, "FLOP/s")}, ridge at ${ridge.toFixed(ridge < 10 ? 1 : 0)} FLOP/B` });
      }
    });
    if (setIndex === 0) {
      legendRows.push({ color: memColor, text: `HBM ${si(bw, "B/s")} (the slope)` });
      if (s.d.l2_bandwidth) legendRows.push({ color: memColor, style: "dotted", text: `L2 ${si(s.d.l2_bandwidth, "B/s")} (measured by rooflens calibrate)` });
    }
  });
  // Compute-roof labels in the right margin, those in use pushed apart where roofs lie close.
  for (const group of [labels.filter((r) => !r.other), labels.filter((r) => r.other)])
    for (const r of apart(group, 14))
      el("text", { class: "roof-label" + r.other, x: W - Rm + 6, y: r.ly, fill: r.color }, svg).textContent = r.label;
  const row = h("div", undefined, legend, "row");
  for (const r of legendRows) {
    const s = h("span", undefined, row, r.other ? "other" : "");
    h("b", undefined, s, "swatch" + (r.style ? " " + r.style : "")).style.borderColor = r.color;
    s.appendChild(document.createTextNode(r.text));
  }
  if (o.spec) {
    const s = h("span", undefined, row);
    h("b", undefined, s, "swatch dashed").style.borderColor = memColor;
    s.appendChild(document.createTextNode("spec roofs (solid: calibrated)"));
  }
  if (!o.device.l2_bandwidth) h("span", "no L2 slope: no spec sheet gives L2 bandwidth; `rooflens calibrate` measures it (--device-profile)", row, "s");
  if (others) {
    const label = h("label", undefined, row, "s");
    const box = h("input", undefined, label);
    box.type = "checkbox";
    label.appendChild(document.createTextNode(` show the roofs of the ${others} precision${others > 1 ? "s" : ""} the model does not run in`));
    box.addEventListener("change", () => { svg.classList.toggle("show-other", box.checked); legend.classList.toggle("show-other", box.checked); });
  }
  return { svg, lx, ly, xmin, xmax, ymin, ymax };
};
