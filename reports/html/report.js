"use strict";
// rooflens HTML report: renders the result JSON embedded in this page. No network, no libraries.
(function () {
  const started = performance.now();
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  if (R.schema === "rooflens-serve") return;  // serve.js draws a serving result
  const { $, el, h, apart } = window.rooflensDom;
  const { si, bytes, time } = window.rooflensDom;  // the page's one set of number formats
  // Layer numbers folded by the analyzer (the JSON's `block`); results saved before it was written
  // search by name alone.
  const block = (n) => n.block || n.name;

  const nodes = R.nodes;
  const costed = nodes.filter((n) => n.status === "costed");
  const measured = (n) => n.measured && n.measured.status === "measured";
  const dev = R.device, T = R.totals, M = R.memory, P = R.profile;

  // ---- header and cards ----------------------------------------------------------------------
  const modelName = R.model.name || R.model.path.split("/").pop();
  $("title").textContent = "rooflens \u2014 " + modelName;
  document.title = "rooflens \u2014 " + modelName;
  $("subtitle").textContent = `${R.tool.command} \u00b7 ${dev.name} (${dev.roofs} roofs) \u00b7 dtype ${R.dtype} \u00b7 schema ${R.schema_version}`;
  const cards = $("cards");
  const card = (k, v, s, warn) => {
    const c = h("div", undefined, cards, "card");
    h("div", k, c, "k");
    h("div", v, c, "v" + (warn ? " warn" : ""));
    if (s) h("div", s, c, "s");
  };
  card("model", modelName, R.model.producer || "");
  const picked = dev.requested && dev.requested.toLowerCase() !== dev.id.toLowerCase() ? ` \u00b7 --device ${dev.requested}` : "";
  card("device", dev.id, `${dev.roofs} roofs` + (dev.spec ? ` (measured on ${dev.measured_gpu})` : "") + picked);
  card("dtype", R.dtype);
  card("params", si(T.params, ""), T.buffers ? `+ ${si(T.buffers, "")} buffers` : "");
  card("FLOPs", si(T.flops, "FLOP"), T.macs ? `MACs ${si(T.macs, "")}` : "");
  card("bytes moved", bytes(T.bytes_read_activations + T.bytes_read_weights + T.bytes_written), "unfused, all nodes");
  if (R.transformer && !R.training) card("KV cache", bytes(R.transformer.kv_bytes_batch || 0), `${bytes(R.transformer.kv_bytes_per_token || 0)} per token` + (R.transformer.tp > 1 ? `, per GPU of ${R.transformer.tp}` : ""));
  if (R.training) {
    const Tr = R.training;
    card("training peak", `${bytes(Tr.peak_memory_bytes)} of ${bytes(Tr.device_memory_bytes)}`,
      `at ${Tr.peak_moment}; model state ${bytes(Tr.model_state_bytes)}: ` + (Tr.fits ? "fits" : "does not fit"), !Tr.fits);
    card("step", time(Tr.step_time_s), `${Tr.precision}, ${Tr.optimizer}, recompute ${Tr.recompute}: ${Tr.tokens_per_s.toFixed(0)} ${Tr.seq ? "tokens" : "samples"}/s; ` +
      `kernels ${time(Tr.gpu_busy_s)}` + (Tr.host_modelled ? `, GPU waiting on the host ${time(Tr.gpu_wait_s)}` : ", host not modelled") +
      `; matrix FLOPs ${si(Tr.gemm_dense_flops, "FLOP")}`);
  } else card("memory", `${bytes(M.total_bytes)} of ${bytes(M.device_memory_bytes)}`,
    `weights ${bytes(M.weight_bytes)}` + (M.kv_cache_bytes ? ` + KV ${bytes(M.kv_cache_bytes)}` : "") +
    ` + act. ${bytes(M.activation_bytes)}: ` + (M.fits ? "fits" : "does not fit"), !M.fits);
  const gen = R.transformer && R.transformer.generation;
  // The predicted time never stands alone over a partial graph.
  const Cov = R.coverage;
  const partial = Cov.not_costed ? ` \u00b7 partial: ${Cov.costed + Cov.folded + (Cov.fused || 0)} of ${Cov.total} nodes costed, a lower bound` : "";
  if (gen) card("predicted", time(gen.total_s), `${gen.gen} tokens x batch ${R.transformer.batch}: ${gen.tokens_per_s.toFixed(1)} tokens/s (prefill ${time(gen.ttft_s)})`);
  else if (R.training) card("forward", time(T.predicted_s), "the forward alone; the step's card holds the whole step" + partial, partial !== "");
  else card("predicted", time(T.predicted_s), `${T.throughput_per_s.toFixed(1)} ${T.throughput_unit || "samples/s"}` + partial, partial !== "");
  const anyMeasured = P && P.measured > 0;
  if (anyMeasured) card("measured", time(P.measured_s), `over ${P.measured} layers; model error ${(100 * P.model_error).toFixed(1)}%` + (P.valid ? "" : " \u2014 INVALID"), !P.valid);
  // The headline weighs each layer's error by its time; the median beside it.
  if (anyMeasured && P.time_weighted_error !== undefined)
    card("time-weighted error", `${(100 * P.time_weighted_error).toFixed(1)}%`, "\u03a3|predicted \u2212 measured| / \u03a3 measured, over the layers");
  if (anyMeasured) card("per-layer error", `${(100 * P.median_abs_error).toFixed(1)}% median`, `p90 ${(100 * P.p90_abs_error).toFixed(1)}% \u00b7 ${P.timing}, L2 ${P.l2}`);
  const C = R.coverage;
  const fused = C.fused || 0;  // Q/DQ inside an int8 kernel; absent from results saved before it
  card("coverage", `${C.costed + C.folded + fused}/${C.total} nodes`, `${C.costed} costed, ${C.folded} folded before the run` +
    (fused ? `, ${fused} fused into quantized kernels` : "") +
    (C.not_costed ? ` \u00b7 not costed: ${Object.entries(C.missing).map(([op, k]) => `${op} \u00d7${k}`).join(", ")}` : ""), C.not_costed > 0);

  // ---- roofline -------------------------------------------------------------------------------
  const tip = $("tip");
  const showTip = (ev, text) => { tip.textContent = text; tip.style.display = "block"; tip.style.left = ev.clientX + 14 + "px"; tip.style.top = ev.clientY + 10 + "px"; };
  const hideTip = () => { tip.style.display = "none"; };
  const perf = (n) => n.flops / n.predicted_s;
  const lg = $("legend");
  const pointRow = h("div", undefined, lg, "row");  // the points' legend above the roofs'
  const chart = window.rooflensRoofline($("roofline"), lg, {
    id: "roofline-svg", device: dev, spec: dev.spec, units: new Set(costed.map((n) => n.unit).filter((u) => u)),
    extent: costed.filter((n) => n.flops > 0 && n.predicted_s > 0).map((n) => ({ ai: n.intensity, perf: perf(n) })),
  });
  const { svg, lx, ly, xmin, xmax, ymin } = chart;
  const total = T.predicted_s || 1;
  const pointOf = new Map();
  const gpts = el("g", {}, svg);
  const tipText = (n) => {
    let t = `${n.name}\n${n.op} (${n.family})  ${n.precision}\nin ${n.input_shapes.join(" ")}\nout ${n.output_shapes.join(" ")}\n` +
      `FLOPs ${si(n.flops, "")}  bytes ${bytes(n.bytes_read_activations + n.bytes_read_weights + n.bytes_written)}\n` +
      `intensity ${n.intensity.toFixed(2)} FLOP/B  unit ${n.unit}\npredicted ${time(n.predicted_s)} (${n.bound})`;
    if (measured(n)) t += `\nmeasured ${time(n.measured.median_s)} (${n.measured.bound})  error ${(100 * n.measured.error).toFixed(1)}%`;
    else if (n.measured) t += `\n${n.measured.status}: ${n.measured.reason}`;
    return t;
  };
  // A node without FLOPs has no place on a FLOP/s axis: listed under the chart, not drawn.
  const plotted = costed.filter((n) => n.flops > 0);
  const unplotted = new Map();
  for (const n of costed) if (!(n.flops > 0)) unplotted.set(n.op, (unplotted.get(n.op) || 0) + 1);
  if (unplotted.size)
    $("roofline-unplotted").textContent = `Not plotted: ${costed.length - plotted.length} nodes without FLOPs (` +
      [...unplotted.entries()].map(([op, k]) => `${op} \u00d7${k}`).join(", ") + "); they move data only and are in the table.";
  for (const n of plotted) {
    const ix = Math.min(Math.max(n.intensity || xmin, xmin), xmax);
    const py = n.flops > 0 && n.predicted_s > 0 ? perf(n) : ymin;
    const clamped = ix !== n.intensity || py !== perf(n);
    const r = 2.5 + 12 * Math.sqrt(n.predicted_s / total);
    const cls = n.bound === "comm" ? "comm" : n.bound;
    if (measured(n) && n.flops > 0) {
      const my = Math.max(n.flops / n.measured.median_s, ymin);
      el("line", { class: "mline", x1: lx(ix), y1: ly(py), x2: lx(ix), y2: ly(my) }, gpts);
      el("circle", { class: "mpt", cx: lx(ix), cy: ly(my), r: 3 }, gpts);
    }
    const c = el("circle", { class: `pt ${cls}${clamped ? " clamped" : ""}`, cx: lx(ix), cy: ly(py), r: r.toFixed(1), "data-index": n.index }, gpts);
    c.addEventListener("mouseover", (ev) => showTip(ev, tipText(n) + (clamped ? "\n(drawn at the chart edge)" : "")));
    c.addEventListener("mouseout", hideTip);
    c.addEventListener("click", () => select(n.index, true));
    pointOf.set(n.index, c);
  }
  const points = [["compute-bound", "#2f6fdf"], ["memory-bound", "#e07b00"], ["latency-bound", "#8a8f98"]];
  if (plotted.some((n) => n.bound === "comm")) points.push(["communication", "#7b3fbf"]);
  for (const [k, c] of points) {
    const s = h("span", undefined, pointRow);
    h("i", undefined, s).style.background = c;
    s.appendChild(document.createTextNode(k));
  }
  h("span", "point size: share of predicted time", pointRow, "s");
  if (P) h("span", "red ring: measured, joined to its prediction", pointRow, "s");

  // ---- layer table ----------------------------------------------------------------------------
  const cols = [
    ["name", (n) => n.name], ["op", (n) => n.op], ["class", (n) => n.family || ""], ["bound", (n) => n.bound || n.status],
    ["FLOPs", (n) => n.flops || 0, si], ["bytes", (n) => (n.bytes_read_activations || 0) + (n.bytes_read_weights || 0) + (n.bytes_written || 0), bytes],
    ["AI", (n) => (n.flops > 0 ? n.intensity : -1), (v) => (v < 0 ? "-" : v.toFixed(1))],
    // Folded and fused nodes run no kernel: no time, and nothing it came from.
    ["predicted", (n) => (n.status === "costed" ? n.predicted_s || 0 : -1), (v) => (v < 0 ? "-" : time(v))],
  ];
  cols.push(["time from", (n) => (n.status === "costed" ? n.source || "" : "-")]);
  if (R.training) {  // the node's share of the training step: training.rows is in nodes' order
    const trainRow = (n) => R.training.rows[n.index] || {};
    cols.push(["fwd", (n) => trainRow(n).forward_s || 0, time], ["bwd", (n) => trainRow(n).backward_s || 0, time],
      ["recompute", (n) => trainRow(n).recompute_s || 0, time], ["saved", (n) => trainRow(n).saved_bytes || 0, bytes]);
  }
  if (P) cols.push(["measured", (n) => (measured(n) ? n.measured.median_s : -1), (v) => (v < 0 ? "-" : time(v))],
    ["error %", (n) => (measured(n) ? 100 * n.measured.error : NaN), (v) => (isNaN(v) ? "-" : v.toFixed(1))],
    ["ran", (n) => (measured(n) ? n.measured.library || "" : "")]);
  const thead = $("thead"), tbody = $("tbody");
  let sortCol = 7, sortDir = -1, selected = -1;
  const headRow = h("tr", undefined, thead);
  cols.forEach((c, i) => {
    const th = h("th", c[0], headRow);
    th.dataset.col = i;
    th.addEventListener("click", () => { sortDir = sortCol === i ? -sortDir : -1; sortCol = i; renderTable(); });
  });
  const opSel = $("filter-op"), clsSel = $("filter-class");
  for (const op of [...new Set(nodes.map((n) => n.op))].sort()) h("option", op, opSel).value = op;
  for (const b of ["compute", "memory", "latency", "comm", "folded", "fused", "not costed"]) h("option", b, clsSel).value = b;
  const rowOf = new Map();
  const MAX_ROWS = 600;
  function renderTable() {
    const q = $("filter-text").value.toLowerCase(), op = opSel.value, cl = clsSel.value;
    let rows = nodes.filter((n) => (!q || n.name.toLowerCase().includes(q) || block(n).toLowerCase().includes(q)) &&
      (!op || n.op === op) && (!cl || (n.bound || n.status) === cl));
    const key = cols[sortCol][1];
    rows.sort((a, b) => { const x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * sortDir; });
    $("table-count").textContent = `${rows.length} of ${nodes.length} nodes` + (rows.length > MAX_ROWS ? `, first ${MAX_ROWS} shown` : "");
    tbody.textContent = "";
    rowOf.clear();
    for (const n of rows.slice(0, MAX_ROWS)) {
      const tr = h("tr", undefined, tbody);
      tr.dataset.index = n.index;
      cols.forEach((c, i) => { const v = c[1](n); h("td", c[2] ? c[2](v) : v, tr, i >= 4 ? "n" : ""); });
      tr.addEventListener("click", () => select(n.index, false));
      if (n.index === selected) tr.classList.add("selected");
      rowOf.set(n.index, tr);
    }
    for (const th of headRow.children) th.textContent = cols[+th.dataset.col][0] + (+th.dataset.col === sortCol ? (sortDir < 0 ? " \u25be" : " \u25b4") : "");
  }
  function select(index, fromChart) {
    if (selected >= 0) {
      pointOf.get(selected) && pointOf.get(selected).classList.remove("selected");
      rowOf.get(selected) && rowOf.get(selected).classList.remove("selected");
    }
    selected = index;
    const p = pointOf.get(index), r = rowOf.get(index);
    if (p) { p.classList.add("selected"); p.parentNode.appendChild(p); }
    if (r) { r.classList.add("selected"); if (fromChart && r.scrollIntoView) r.scrollIntoView({ block: "nearest" }); }
  }
  for (const id of ["filter-text", "filter-op", "filter-class"]) $(id).addEventListener("input", renderTable);
  renderTable();

  // ---- time by op and by block ------------------------------------------------------------------
  const bars = (parent, items, label, value, fmt) => {
    const max = Math.max(...items.map(value), 1e-30);
    for (const it of items) {
      const row = h("div", undefined, parent, "bar");
      h("div", label(it), row, "l").title = label(it);
      // The bar's length a share of what the row leaves it, so a narrow window shrinks it.
      h("div", undefined, h("div", undefined, row, "track"), "b").style.width = Math.max(0.5, 100 * value(it) / max) + "%";
      h("div", fmt(it), row, "t");
    }
  };
  bars($("by-op"), R.by_op.slice(0, 20), (s) => `${s.op} \u00d7${s.count}`, (s) => s.predicted_s, (s) => `${time(s.predicted_s)} (${(100 * s.predicted_s / total).toFixed(1)}%)`);
  bars($("by-block"), R.by_block.slice(0, 20), (s) => s.block, (s) => s.predicted_s, (s) => `${time(s.predicted_s)} \u00d7${s.count}`);

  // Axis ticks: about `count` round values covering [lo, hi].
  const ticks = (lo, hi, count) => {
    const raw = (hi - lo) / count, mag = 10 ** Math.floor(Math.log10(raw || 1));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((v) => v >= raw) || raw;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return out;
  };

  // ---- transformer: phases and the generation sweep ------------------------------------------------
  if (R.transformer && R.transformer.generation) {
    const g = R.transformer.generation;
    $("sweep-section").style.display = "";
    $("phases").textContent = `prefill of ${g.prompt} tokens: ${time(g.ttft_s)} (time to first token) \u00b7 decode: ${time(g.tpot_first_s)} per token at context ${g.prompt + 1} \u2192 ${time(g.tpot_last_s)} at ${g.prompt + g.gen - 1} \u00b7 ${time(g.total_s)} in all, ${g.tokens_per_s.toFixed(1)} tokens/s`;
    const s = el("svg", { viewBox: "0 0 900 260", width: "100%", id: "sweep-svg" }, $("sweep"));
    const st = g.decode_step_s, n = st.length;
    if (n > 0) {
      // The step time grows with the context by a few percent: the axis spans the data, not zero.
      const lo = Math.min(...st), hi = Math.max(...st), pad = Math.max((hi - lo) * 0.15, hi * 0.005);
      const y0 = Math.max(0, lo - pad), y1 = hi + pad, c0 = g.prompt + 1, c1 = g.prompt + Math.max(n, 2) - 1 + 1;
      const sx = (c) => 90 + (c - c0) / Math.max(c1 - c0, 1) * 780, sy = (v) => 220 - (v - y0) / (y1 - y0) * 200;
      const gs = el("g", { class: "grid" }, s), as = el("g", { class: "axis" }, s);
      for (const v of ticks(y0, y1, 5)) {
        el("line", { x1: 90, x2: 870, y1: sy(v), y2: sy(v) }, gs);
        el("text", { x: 84, y: sy(v) + 4, "text-anchor": "end" }, as).textContent = time(v);
      }
      for (const c of ticks(c0, c1, 6)) {
        el("line", { x1: sx(c), x2: sx(c), y1: 20, y2: 220 }, gs);
        el("text", { x: sx(c), y: 234, "text-anchor": "middle" }, as).textContent = String(Math.round(c));
      }
      el("text", { x: 480, y: 254, "text-anchor": "middle" }, as).textContent = "context (tokens in the KV cache) \u2192";
      el("text", { x: 94, y: 14 }, as).textContent = "time per output token" + (y0 > 0 ? " (axis not from zero)" : "");
      el("polyline", { points: st.map((v, i) => `${sx(c0 + i)},${sy(v)}`).join(" "), fill: "none", stroke: "#2f6fdf", "stroke-width": 2 }, s);
    }
  }

  // ---- memory timeline ---------------------------------------------------------------------------
  if (R.training) {
    // A training step: one stacked bar per moment of the step (training.timeline), peak marked.
    const Tr = R.training, tl = Tr.timeline;
    const parts = [["weights", "#c9d7f2"], ["optimizer_states", "#9fb7e6"], ["grads", "#f2dcc9"], ["autocast_copies", "#e8c27a"],
                   ["saved_activations", "#5f9e5f"], ["transient", "#b9d9b0"], ["workspace", "#c8c8c8"]];
    const peak = Math.max(...tl.map((m) => m.total), 1);
    const deviceOnScale = Tr.device_memory_bytes <= peak * 3;
    const top = Math.max(peak * 1.12, deviceOnScale ? Tr.device_memory_bytes * 1.05 : 0, 1);
    const s = el("svg", { viewBox: "0 0 900 300", width: "100%", id: "memory-svg" }, $("memory"));
    const X0 = 90, X1 = 870, w = (X1 - X0) / tl.length, my = (v) => 230 - v / top * 215;
    const gm = el("g", { class: "grid" }, s), am = el("g", { class: "axis" }, s);
    const unit = 1024 ** Math.max(0, Math.floor(Math.log(top) / Math.log(1024)));
    for (const v of ticks(0, top / unit, 5).map((t) => t * unit)) {
      el("line", { x1: X0, x2: X1, y1: my(v), y2: my(v) }, gm);
      el("text", { x: X0 - 6, y: my(v) + 4, "text-anchor": "end" }, am).textContent = bytes(v);
    }
    tl.forEach((m, i) => {
      let y = 0;
      for (const [k, color] of parts) {
        const v = m[k] || 0;
        if (v > 0) {
          const r = el("rect", { class: "mem-area", x: X0 + i * w + 1, y: my(y + v), width: Math.max(w - 2, 1), height: my(y) - my(y + v), fill: color }, s);
          el("title", {}, r).textContent = `${m.moment}: ${k.replace(/_/g, " ")} ${bytes(v)} (total ${bytes(m.total)})`;
        }
        y += v;
      }
      if (m.moment === Tr.peak_moment) {
        const px = X0 + (i + 0.5) * w, right = px > (X0 + X1) / 2;
        el("circle", { cx: px, cy: my(m.total), r: 4, fill: "#b42318" }, s);
        el("text", { x: right ? px - 8 : px + 8, y: Math.max(my(m.total) - 6, 12), "text-anchor": right ? "end" : "start" }, s).textContent =
          `peak ${bytes(m.total)}: ${m.moment}`;
      }
    });
    if (deviceOnScale) {
      el("line", { x1: X0, x2: X1, y1: my(Tr.device_memory_bytes), y2: my(Tr.device_memory_bytes), stroke: "#b42318", "stroke-dasharray": "6 4" }, s);
      el("text", { x: X0 + 4, y: my(Tr.device_memory_bytes) - 4 }, s).textContent = `device memory ${bytes(Tr.device_memory_bytes)}`;
    }
    el("text", { x: X0, y: 250 }, s).textContent = "the step \u2192 (forward layers, loss, backward layers, optimizer)";
    let lx = X0;
    for (const [k, color] of parts) {
      el("rect", { x: lx, y: 262, width: 10, height: 10, fill: color }, s);
      const t = el("text", { x: lx + 14, y: 271 }, s);
      t.textContent = k.replace(/_/g, " ");
      lx += 14 + 7 * t.textContent.length + 16;
    }
    if (!deviceOnScale)
      el("text", { x: X0, y: 292 }, s).textContent = `device memory ${bytes(Tr.device_memory_bytes)} is off this scale`;
  } else {
    const live = M.live_bytes_per_node || [];
    const kv = M.kv_cache_bytes !== undefined ? M.kv_cache_bytes : R.transformer ? R.transformer.kv_bytes_batch || 0 : 0;
    const base = M.weight_bytes + kv, peak = Math.max(0, ...live), used = base + peak;
    // The scale is the model's own: a small model on an 80 GB GPU would otherwise be an empty box.
    const deviceOnScale = M.device_memory_bytes <= used * 3;
    const top = Math.max(used * 1.12, deviceOnScale ? M.device_memory_bytes * 1.05 : 0, 1);
    const s = el("svg", { viewBox: "0 0 900 276", width: "100%", id: "memory-svg" }, $("memory"));
    const n = Math.max(live.length, 1), X0 = 90, X1 = 870, mx = (i) => X0 + i / n * (X1 - X0), my = (v) => 230 - v / top * 215;
    const gm = el("g", { class: "grid" }, s), am = el("g", { class: "axis" }, s);
    const unit = 1024 ** Math.max(0, Math.floor(Math.log(top) / Math.log(1024)));  // round in the unit shown
    for (const v of ticks(0, top / unit, 5).map((t) => t * unit)) {
      el("line", { x1: X0, x2: X1, y1: my(v), y2: my(v) }, gm);
      el("text", { x: X0 - 6, y: my(v) + 4, "text-anchor": "end" }, am).textContent = bytes(v);
    }
    el("rect", { class: "mem-area", x: X0, y: my(M.weight_bytes), width: X1 - X0, height: 230 - my(M.weight_bytes), fill: "#c9d7f2" }, s);
    if (kv > 0) el("rect", { class: "mem-area", x: X0, y: my(base), width: X1 - X0, height: my(M.weight_bytes) - my(base), fill: "#f2dcc9" }, s);
    if (live.length) {
      const pts = live.map((v, i) => `${mx(i)},${my(base + v)}`);
      el("polygon", { class: "mem-area", points: `${mx(0)},${my(base)} ${pts.join(" ")} ${mx(live.length - 1)},${my(base)}`, fill: "#5f9e5f", opacity: 0.85 }, s);
      const pk = live.indexOf(peak), px = mx(pk), right = px > (X0 + X1) / 2;
      el("circle", { cx: px, cy: my(base + peak), r: 4, fill: "#b42318" }, s);
      el("text", { x: right ? px - 8 : px + 8, y: Math.max(my(base + peak) - 6, 12), "text-anchor": right ? "end" : "start" }, s).textContent =
        `peak ${bytes(peak)} of activations at ${M.peak_node}`;
    }
    if (deviceOnScale) {
      el("line", { x1: X0, x2: X1, y1: my(M.device_memory_bytes), y2: my(M.device_memory_bytes), stroke: "#b42318", "stroke-dasharray": "6 4" }, s);
      el("text", { x: X0 + 4, y: my(M.device_memory_bytes) - 4 }, s).textContent = `device memory ${bytes(M.device_memory_bytes)}`;
    }
    el("text", { x: X0, y: 250 }, s).textContent = `execution order \u2192  blue: weights ${bytes(M.weight_bytes)}` +
      (kv > 0 ? `, orange: KV cache ${bytes(kv)}` : "") + `, green: live activations`;
    if (!deviceOnScale)
      el("text", { x: X0, y: 266 }, s).textContent =
        `device memory ${bytes(M.device_memory_bytes)} is off this scale: the model uses ${(100 * used / M.device_memory_bytes).toFixed(1)}% of it`;
  }
  document.body.dataset.renderMs = (performance.now() - started).toFixed(0);

  // ---- self-test (#selftest): what the browser tests check, written into the page ----------------
  if (location.hash === "#selftest") {
    const out = { checks: {} };
    const ok = (name, cond, detail) => { out.checks[name] = { pass: !!cond, detail: detail }; };
    const pts = document.querySelectorAll("#roofline-svg circle.pt");
    const listed = costed.length - plotted.length;
    ok("one_point_per_node_with_flops", pts.length === plotted.length && pts.length + listed === costed.length,
      `${pts.length} points + ${listed} listed without FLOPs, ${costed.length} costed nodes`);
    if (pts.length) {
      pts[0].dispatchEvent(new MouseEvent("mouseover", { clientX: 100, clientY: 100, bubbles: true }));
      ok("tooltip_on_hover", tip.style.display === "block" && tip.textContent.includes(plotted[0].name), tip.textContent.split("\n")[0]);
      hideTip();
    } else ok("tooltip_on_hover", false, "no points");
    const th = headRow.children[7];
    th.click();
    const first = () => [...tbody.rows].slice(0, 3).map((r) => nodes.find((n) => n.index === +r.dataset.index).predicted_s || 0);
    const a = first();
    th.click();
    const b = first();
    ok("table_sorts", a.length < 2 || (a[0] <= a[1] && b[0] >= b[1] && (a[0] !== b[0] || a[0] === a[a.length - 1])), `asc ${a} / desc ${b}`);
    const row = tbody.rows[0];
    if (row) { row.click(); const p = pointOf.get(+row.dataset.index); ok("row_selects_point", !p || p.classList.contains("selected"), row.dataset.index); }
    const resources = performance.getEntriesByType("resource").length;
    ok("no_network_requests", resources === 0, `${resources} resource entries`);
    ok("rendered_under_2s", +document.body.dataset.renderMs < 2000, `${document.body.dataset.renderMs} ms`);
    ok("no_errors", window.__rooflensErrors.length === 0, window.__rooflensErrors.join(" | "));
    // No two roof labels overlap, by their rendered boxes.
    const boxes = [...document.querySelectorAll("#roofline-svg text.roof-label")].map((t) => [t.textContent, t.getBoundingClientRect()]);
    const clashes = [];
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, p] = boxes[i], [b, q] = boxes[j];
        if (p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom) clashes.push(`${a} / ${b}`);
      }
    ok("roof_labels_apart", boxes.length > 0 && clashes.length === 0, `${boxes.length} labels; overlapping: ${clashes.join(", ") || "none"}`);
    // The memory chart draws something a person can see: a bar or area at least 2 px tall and wide.
    const areas = [...document.querySelectorAll("#memory-svg .mem-area")].map((e) => e.getBoundingClientRect());
    const visible = areas.filter((r) => r.height >= 2 && r.width >= 2);
    ok("memory_chart_visible", visible.length > 0, `${visible.length} of ${areas.length} areas visible; tallest ${Math.max(0, ...areas.map((r) => r.height)).toFixed(1)} px`);
    if (R.training) {  // training.js ran first: the step's split, its loss and optimizer rows, the host's note
      const split = document.querySelectorAll("#training-split-svg .split-part").length, rows = $("training-tbody").rows.length;
      ok("training_step_shown", $("training-section").style.display === "" && split > 0 && rows === R.training.steps.length &&
        $("training-host").textContent.length > 0, `${split} parts in the split, ${rows} of ${R.training.steps.length} step rows`);
    }
    // Nothing spills out of its box: every element inside its parent (unless the parent clips or
    // scrolls on purpose), and no text wider than its own box. SVG content is the charts' own.
    const spills = [];
    const clips = (e) => ["hidden", "auto", "scroll", "clip"].includes(getComputedStyle(e).overflowX);
    for (const e of document.querySelectorAll("main *")) {
      if (e.closest("svg") || e.closest(".tablewrap") || e.id === "selftest" || !e.getClientRects().length) continue;
      const p = e.parentElement, r = e.getBoundingClientRect(), q = p.getBoundingClientRect();
      const what = `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : e.className ? "." + String(e.className).split(" ")[0] : ""} "${(e.textContent || "").slice(0, 40)}"`;
      if (!clips(p) && (r.left < q.left - 1 || r.right > q.right + 1)) spills.push(what + " outside its parent");
      if (!clips(e) && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && getComputedStyle(e).display !== "inline") spills.push(what + " wider than its box");
    }
    ok("nothing_overflows", spills.length === 0, `${spills.length} overflowing: ${spills.slice(0, 5).join("; ") || "none"} (window ${window.innerWidth} px)`);
    out.pass = Object.values(out.checks).every((c) => c.pass);
    $("selftest").textContent = JSON.stringify(out);
  }
})();
