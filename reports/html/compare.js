"use strict";
// rooflens HTML report, `compare` part: renders R.compare (docs/json.md) when the result has it:
// the per-step headline, each module's predicted and measured point on the roofline joined by a
// line, the gap table (blocks or modules, sortable), unattributed time and notes.
(function () {
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  const C = R.compare;
  if (!C) return;
  const { $, el, h } = window.rooflensDom;
  const time = (s) => (s < 0 ? "-" + window.rooflensDom.time(-s) : window.rooflensDom.time(s));  // gaps can be negative
  const pct = (v) => (v === null || v === undefined ? "-" : (100 * v).toFixed(0) + "%");
  const share = (p, w) => (w > 0 ? (100 * p / w).toFixed(1) + "%" : "-");
  const label = (p) => (p === "" ? "(model)" : p);
  $("compare-section").style.display = "";

  // ---- headline --------------------------------------------------------------------------------
  const tl = C.timeline, total = C.total_kernel_s;
  $("compare-head").textContent =
    `${tl.path} \u00b7 ${tl.source}${tl.gpu ? " \u00b7 " + tl.gpu : ""} \u00b7 ${C.steps} step(s): ${C.step_source} \u00b7 module ranges: ${tl.ranges}` +
    (tl.complete ? "" : ` \u00b7 INCOMPLETE: ${tl.incomplete_reason}`) +
    (C.forced ? ` \u00b7 FORCED (--force), the trace may not be a run of this model: ${C.forced}` : "") +
    (C.precision_mismatch ? ` \u00b7 precision: ${C.precision_mismatch}` : "");
  // Per-step figures and whole-trace figures in two groups, each card saying which it is.
  const card = (box, k, v, sub, warn) => {
    const c = h("div", undefined, box, "card");
    h("div", k, c, "k");
    h("div", v, c, "v" + (warn ? " warn" : ""));
    if (sub) h("div", sub, c, "s");
  };
  const step = $("compare-cards"), trace = $("compare-cards-trace");
  $("compare-trace-head").textContent = `Whole trace (${C.steps} step${C.steps === 1 ? "" : "s"})`;
  card(step, "predicted per step", time(C.predicted_s), "the model on " + R.device.id);
  card(step, "GPU busy per step", time(C.step.kernel_s), `IQR ${time(C.step.kernel_q1_s)} \u2013 ${time(C.step.kernel_q3_s)}`);
  card(step, "efficiency per step", pct(C.efficiency), "predicted / measured GPU busy", C.efficiency !== null && C.efficiency < 0.5);
  if (C.step.idle_s !== undefined) card(step, "GPU idle per step", time(C.step.idle_s), "gaps between activities within a step");
  card(trace, "in modules, whole trace", share(C.matched_kernel_s, total), `of ${time(total)} GPU time; ${share(C.unattributed_kernel_s, total)} in no module`, C.unattributed_kernel_s > 0.05 * total);
  card(trace, "host gaps, whole trace", time(C.host_gap_s), `host wait ${time(C.idle.host_wait_s)} \u00b7 other ${time(C.idle.other_s)}`);
  card(trace, "GPU activities, whole trace", `${C.kernels} kernels`, `${C.memcpys} memcpys \u00b7 ${C.memsets} memsets`);

  // ---- roofline: predicted (filled) and measured (ring) per module -------------------------------
  const pts = C.modules.filter((m) => m.flops > 0 && m.bytes > 0 && m.predicted_s > 0);
  // The page's one roofline: the roofs of the precisions the model's nodes run in.
  const units = new Set(R.nodes.filter((n) => n.status === "costed").map((n) => n.unit).filter((u) => u));
  const extent = [];
  for (const m of pts) {
    extent.push({ ai: m.flops / m.bytes, perf: m.flops / m.predicted_s });
    if (m.measured_s > 0) extent.push({ ai: m.flops / m.bytes, perf: m.flops / m.measured_s });
  }
  const { svg, lx, ly, ymin } = window.rooflensRoofline($("compare-roofline-box"), $("compare-legend"), {
    id: "compare-roofline", device: R.device, spec: R.device.spec, units, extent, height: 420,
    xlabel: "arithmetic intensity of the module's nodes (FLOP/byte)",
  });
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
  const legendRow = h("div", undefined, $("compare-legend"), "row");
  const predicted = h("span", undefined, legendRow);
  h("i", undefined, predicted).style.background = "#2f6fdf";
  predicted.appendChild(document.createTextNode("predicted per module"));
  h("span", "red ring: measured, joined to its prediction (lower = slower than predicted)", legendRow, "s");

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
    // A row with nothing predicted or measured (the root's own share, when all is in its children) says nothing.
    const rows = (view.value === "blocks" ? C.blocks : C.modules).filter((r) => r.predicted_s > 0 || r.measured_s > 0 || r.kernels > 0);
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
