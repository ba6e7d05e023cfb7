"use strict";
// rooflens HTML report, `compare` part: renders R.compare (docs/json.md) when the result has it:
// the per-step headline, each module's predicted and measured point on the roofline joined by a
// line, the gap table (blocks or modules, sortable), unattributed time and notes.
(function () {
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  const C = R.compare;
  if (!C) return;
  const { $, el, h, apart } = window.rooflensDom;
  const time = (s) => {
    if (s === null || s === undefined || !isFinite(s)) return "-";
    const a = Math.abs(s), sign = s < 0 ? "-" : "";
    if (a >= 1) return sign + a.toFixed(2) + " s";
    if (a >= 1e-3) return sign + (a * 1e3).toFixed(2) + " ms";
    return sign + (a * 1e6).toFixed(1) + " \u00b5s";
  };
  const pct = (v) => (v === null || v === undefined ? "-" : (100 * v).toFixed(0) + "%");
  const share = (p, w) => (w > 0 ? (100 * p / w).toFixed(1) + "%" : "-");
  const label = (p) => (p === "" ? "(model)" : p);
  $("compare-section").style.display = "";

  // ---- headline --------------------------------------------------------------------------------
  const tl = C.timeline, total = C.total_kernel_s;
  $("compare-head").textContent =
    `${tl.path} \u00b7 ${tl.source}${tl.gpu ? " \u00b7 " + tl.gpu : ""} \u00b7 ${C.steps} step(s): ${C.step_source} \u00b7 module ranges: ${tl.ranges}` +
    (tl.complete ? "" : ` \u00b7 INCOMPLETE: ${tl.incomplete_reason}`);
  const cards = $("compare-cards");
  const card = (k, v, s, warn) => {
    const c = h("div", undefined, cards, "card");
    h("div", k, c, "k");
    h("div", v, c, "v" + (warn ? " warn" : ""));
    if (s) h("div", s, c, "s");
  };
  card("predicted per step", time(C.predicted_s), "the model on " + R.device.id);
  card("GPU busy per step", time(C.step.kernel_s), `IQR ${time(C.step.kernel_q1_s)} \u2013 ${time(C.step.kernel_q3_s)}`);
  card("efficiency", pct(C.efficiency), "predicted / measured", C.efficiency !== null && C.efficiency < 0.5);
  card("in modules of the model", share(C.matched_kernel_s, total), `of ${time(total)} GPU time; ${share(C.unattributed_kernel_s, total)} in no module`, C.unattributed_kernel_s > 0.05 * total);
  card("host gaps", time(C.host_gap_s), `host wait ${time(C.idle.host_wait_s)} \u00b7 other ${time(C.idle.other_s)}`);
  card("GPU activities", `${C.kernels} kernels`, `${C.memcpys} memcpys \u00b7 ${C.memsets} memsets`);

  // ---- roofline: predicted (filled) and measured (ring) per module -------------------------------
  const pts = C.modules.filter((m) => m.flops > 0 && m.bytes > 0 && m.predicted_s > 0);
  const W = 900, H = 420, L = 90, B = 40, T = 12, Rm = 20;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", id: "compare-roofline" }, $("compare-roofline-box"));
  const rates = [];
  for (const k in R.device.tensor_flops) rates.push(["tensor " + k, R.device.tensor_flops[k]]);
  for (const k in R.device.cuda_core_flops) rates.push(["CUDA cores " + k, R.device.cuda_core_flops[k]]);
  rates.sort((a, b) => b[1] - a[1]);
  // Equal rates (bf16 and fp16, fp8 and int8) share one line and one label.
  for (let i = rates.length - 1; i > 0; i--)
    if (rates[i][1] === rates[i - 1][1]) { rates[i - 1][0] += " / " + rates[i][0].split(" ").pop(); rates.splice(i, 1); }
  const peak = rates.length ? rates[0][1] : 1, bw = R.device.hbm_bandwidth;
  let xmin = 0.1, xmax = 1e4, ymin = peak / 1e5;
  for (const m of pts) {
    const ai = m.flops / m.bytes;
    xmin = Math.min(xmin, ai / 2); xmax = Math.max(xmax, ai * 2);
    ymin = Math.min(ymin, m.flops / Math.max(m.measured_s, m.predicted_s) / 2);
  }
  ymin = Math.max(ymin, peak / 1e8);
  const lx = (x) => L + (Math.log10(x) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin)) * (W - L - Rm);
  const ly = (y) => H - B - (Math.log10(y) - Math.log10(ymin)) / (Math.log10(peak * 2) - Math.log10(ymin)) * (H - B - T);
  const g = el("g", { class: "grid" }, svg), ax = el("g", { class: "axis" }, svg);
  for (let e = Math.ceil(Math.log10(xmin)); e <= Math.floor(Math.log10(xmax)); e++) {
    el("line", { x1: lx(10 ** e), x2: lx(10 ** e), y1: T, y2: H - B }, g);
    el("text", { x: lx(10 ** e), y: H - B + 14, "text-anchor": "middle" }, ax).textContent = String(10 ** e);
  }
  for (let e = Math.ceil(Math.log10(ymin)); e <= Math.floor(Math.log10(peak * 2)); e++) {
    el("line", { x1: L, x2: W - Rm, y1: ly(10 ** e), y2: ly(10 ** e) }, g);
    el("text", { x: L - 6, y: ly(10 ** e) + 4, "text-anchor": "end" }, ax).textContent = `1e${e} FLOP/s`;
  }
  el("text", { x: (L + W - Rm) / 2, y: H - 6, "text-anchor": "middle" }, ax).textContent = "arithmetic intensity of the module's nodes (FLOP/byte)";
  // Every roof of the device, each with its name; the HBM slope under them.
  const roofLabels = [];
  rates.forEach(([name, rate], i) => {
    const ridge = rate / bw, color = i === 0 ? "#1b5fbf" : "#9aa7bd";
    el("polyline", { class: "roof", stroke: color, points: `${lx(xmin)},${ly(Math.max(ymin, xmin * bw))} ${lx(Math.min(ridge, xmax))},${ly(Math.min(rate, xmax * bw))} ${lx(xmax)},${ly(rate)}` }, svg);
    roofLabels.push({ name, color, y: ly(rate) - 3 });
  });
  // Roofs lie close (fp8 and int8, bf16 and tf32): labels pushed apart, none over another.
  for (const r of apart(roofLabels, 13))
    el("text", { class: "roof-label", x: W - Rm - 4, y: r.ly, "text-anchor": "end", fill: r.color }, svg).textContent = r.name;
  const tip = $("tip");
  for (const m of pts) {
    const ai = m.flops / m.bytes, py = m.flops / m.predicted_s;
    const text = `${label(m.path)}\npredicted ${time(m.predicted_s)}  measured ${time(m.measured_s)}  efficiency ${pct(m.efficiency)}\n${m.kernels} kernels per step` + (m.hint ? "\n" + m.hint : "");
    if (m.measured_s > 0) {
      const my = m.flops / m.measured_s;
      el("line", { class: "mline", x1: lx(ai), y1: ly(py), x2: lx(ai), y2: ly(Math.max(my, ymin)) }, svg);
      el("circle", { class: "mpt", cx: lx(ai), cy: ly(Math.max(my, ymin)), r: 3.5 }, svg);
    }
    const c = el("circle", { class: "pt compute", cx: lx(ai), cy: ly(py), r: 3.5 }, svg);
    c.addEventListener("mouseover", (ev) => { tip.textContent = text; tip.style.display = "block"; tip.style.left = ev.clientX + 14 + "px"; tip.style.top = ev.clientY + 10 + "px"; });
    c.addEventListener("mouseout", () => { tip.style.display = "none"; });
  }
  h("span", "blue: predicted per module; red ring: measured, joined to its prediction (lower = slower than predicted)", $("compare-legend"));

  // ---- gap table -------------------------------------------------------------------------------
  const view = $("compare-view"), thead = $("compare-thead"), tbody = $("compare-tbody");
  const cols = [
    ["module", (r) => label(r.path !== undefined ? r.path : r.block)],
    ["\u00d7", (r) => r.instances || 1],
    ["predicted", (r) => r.predicted_s, time], ["measured", (r) => r.measured_s, time],
    ["efficiency", (r) => (r.efficiency === null ? -1 : r.efficiency), (v) => (v < 0 ? "-" : pct(v))],
    ["gap", (r) => r.gap_s, time], ["kernels", (r) => r.kernels],
    ["top kernel", (r) => (r.top_kernels.length ? r.top_kernels[0].short_name : "")], ["hint", (r) => r.hint || ""],
  ];
  let sortCol = 5, sortDir = -1;
  const head = h("tr", undefined, thead);
  cols.forEach((c, i) => {
    const th = h("th", c[0], head);
    th.addEventListener("click", () => { sortDir = sortCol === i ? -sortDir : -1; sortCol = i; render(); });
  });
  function render() {
    const rows = (view.value === "blocks" ? C.blocks : C.modules).slice();
    const key = cols[sortCol][1];
    rows.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
    tbody.textContent = "";
    for (const r of rows.slice(0, 400)) {
      const tr = h("tr", undefined, tbody);
      cols.forEach((c, i) => {
        const v = c[1](r), text = c[2] ? c[2](v) : String(v);
        const td = h("td", i === 7 && text.length > 48 ? text.slice(0, 47) + "\u2026" : text, tr, i >= 1 && i <= 6 ? "n" : "");
        if (i === 7) td.title = v;
        if (i >= 1 && i <= 6) td.style.whiteSpace = "nowrap";
      });
    }
  }
  view.addEventListener("input", render);
  render();

  const notes = $("compare-notes");
  const lines = [...C.notes];
  for (const u of C.unmatched_ranges.slice(0, 5)) lines.push(`range "${u.name}" names no module of the model: ${time(u.kernel_s)} of kernels`);
  for (const u of C.unmapped_instances.slice(0, 5)) lines.push(`instance ${u.name} matched no module: ${time(u.kernel_s)} counted in the module around it`);
  for (const n of lines) h("li", n, notes);
})();
