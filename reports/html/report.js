"use strict";
// rooflens HTML report: renders the result JSON embedded in this page. No network, no libraries.
(function () {
  const started = performance.now();
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  const SVGNS = "http://www.w3.org/2000/svg";  // a namespace name, not a URL that is fetched
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const h = (tag, text, parent, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  };
  const si = (v, unit = "") => {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    const a = Math.abs(v), p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [s, n] of p) if (a >= s) return (v / s).toFixed(a / s >= 100 ? 0 : 1) + " " + n + unit;
    return (a >= 100 ? v.toFixed(0) : v.toPrecision(3)) + " " + unit;
  };
  const bytes = (v) => {
    if (v === null || v === undefined) return "-";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : v.toFixed(0)) + " " + u[i];
  };
  const time = (s) => {
    if (s === null || s === undefined || !isFinite(s)) return "-";
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 1e-3) return (s * 1e3).toFixed(2) + " ms";
    return (s * 1e6).toFixed(1) + " \u00b5s";
  };
  const block = (name) => name.replace(/(^|[._/])\d+(?=[._/]|$)/g, "$1*");

  const nodes = R.nodes;
  const costed = nodes.filter((n) => n.status === "costed");
  const measured = (n) => n.measured && n.measured.status === "measured";
  const dev = R.device, T = R.totals, M = R.memory, P = R.profile;

  // ---- header and cards ----------------------------------------------------------------------
  $("title").textContent = "rooflens \u2014 " + R.model.path.split("/").pop();
  $("subtitle").textContent = `${R.tool.command} \u00b7 ${dev.name} (${dev.roofs} roofs) \u00b7 dtype ${R.dtype} \u00b7 schema ${R.schema_version}`;
  const cards = $("cards");
  const card = (k, v, s, warn) => {
    const c = h("div", undefined, cards, "card");
    h("div", k, c, "k");
    h("div", v, c, "v" + (warn ? " warn" : ""));
    if (s) h("div", s, c, "s");
  };
  card("model", R.model.path.split("/").pop(), R.model.producer || "");
  card("device", dev.id, `${dev.roofs} roofs` + (dev.spec ? ` (measured on ${dev.measured_gpu})` : ""));
  card("dtype", R.dtype);
  card("params", si(T.params, ""), T.buffers ? `+ ${si(T.buffers, "")} buffers` : "");
  card("FLOPs", si(T.flops, "FLOP"), T.macs ? `MACs ${si(T.macs, "")}` : "");
  card("bytes moved", bytes(T.bytes_read_activations + T.bytes_read_weights + T.bytes_written), "unfused, all nodes");
  if (R.transformer) card("KV cache", bytes(R.transformer.kv_bytes_batch || 0), `${bytes(R.transformer.kv_bytes_per_token || 0)} per token`);
  card("memory", `${bytes(M.total_bytes)} of ${bytes(M.device_memory_bytes)}`, `weights ${bytes(M.weight_bytes)} + peak act. ${bytes(M.peak_activation_bytes)}`, !M.fits);
  card("predicted", time(T.predicted_s), `${T.throughput_per_s.toFixed(1)} samples/s`);
  const anyMeasured = P && P.measured > 0;
  if (anyMeasured) card("measured", time(P.measured_s), `over ${P.measured} layers; model error ${(100 * P.model_error).toFixed(1)}%` + (P.valid ? "" : " \u2014 INVALID"), !P.valid);
  if (anyMeasured) card("per-layer error", `${(100 * P.median_abs_error).toFixed(1)}% median`, `p90 ${(100 * P.p90_abs_error).toFixed(1)}% \u00b7 ${P.timing}, L2 ${P.l2}`);
  card("coverage", `${R.coverage.costed}/${R.coverage.total} costed`, R.coverage.line, R.coverage.not_costed > 0);

  // ---- roofline -------------------------------------------------------------------------------
  const tip = $("tip");
  const showTip = (ev, text) => { tip.textContent = text; tip.style.display = "block"; tip.style.left = ev.clientX + 14 + "px"; tip.style.top = ev.clientY + 10 + "px"; };
  const hideTip = () => { tip.style.display = "none"; };
  const W = 900, H = 480, L = 96, B = 40, Tm = 14, Rm = 160;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", id: "roofline-svg" }, $("roofline"));
  const roofsOf = (d) => {
    const r = [];
    for (const k in d.tensor_flops) r.push({ name: "tensor " + k, rate: d.tensor_flops[k] });
    for (const k in d.cuda_core_flops) r.push({ name: "CUDA " + k, rate: d.cuda_core_flops[k] });
    return r;
  };
  const roofSets = [{ d: dev, cls: "" }];
  if (dev.spec) roofSets.push({ d: dev.spec, cls: "spec" });
  let ymax = 0;
  for (const s of roofSets) for (const r of roofsOf(s.d)) ymax = Math.max(ymax, r.rate);
  const perf = (n) => n.flops / n.predicted_s;
  let ymin = ymax / 1e6, xmin = 1e-2, xmax = 1e4;
  for (const n of costed) {
    if (n.intensity > 0) { xmin = Math.min(xmin, n.intensity / 2); xmax = Math.max(xmax, n.intensity * 2); }
    if (n.flops > 0 && n.predicted_s > 0) ymin = Math.min(ymin, perf(n) / 2);
  }
  ymin = Math.max(ymin, ymax / 1e9);
  const lx = (x) => L + (Math.log10(x) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin)) * (W - L - Rm);
  const ly = (y) => H - B - (Math.log10(y) - Math.log10(ymin)) / (Math.log10(ymax * 2) - Math.log10(ymin)) * (H - B - Tm);
  const gx = el("g", { class: "grid" }, svg), ax = el("g", { class: "axis" }, svg);
  for (let e = Math.ceil(Math.log10(xmin)); e <= Math.floor(Math.log10(xmax)); e++) {
    el("line", { x1: lx(10 ** e), x2: lx(10 ** e), y1: Tm, y2: H - B }, gx);
    el("text", { x: lx(10 ** e), y: H - B + 14, "text-anchor": "middle" }, ax).textContent = e < 0 ? (10 ** e).toFixed(-e) : si(10 ** e, "").trim();
  }
  for (let e = Math.ceil(Math.log10(ymin)); e <= Math.floor(Math.log10(ymax * 2)); e++) {
    el("line", { x1: L, x2: W - Rm, y1: ly(10 ** e), y2: ly(10 ** e) }, gx);
    el("text", { x: L - 6, y: ly(10 ** e) + 4, "text-anchor": "end" }, ax).textContent = si(10 ** e, "FLOP/s");
  }
  el("text", { x: (L + W - Rm) / 2, y: H - 6, "text-anchor": "middle" }, ax).textContent = "arithmetic intensity (FLOP/byte)";
  const colors = ["#1b5fbf", "#2f9e44", "#b0358f", "#c77c02", "#5f3dc4", "#0b7285", "#862e9c"];
  roofSets.forEach((s, si_) => {
    const bws = [{ name: "HBM", bw: s.d.hbm_bandwidth }];
    if (s.d.l2_bandwidth) bws.push({ name: "L2", bw: s.d.l2_bandwidth });
    roofsOf(s.d).forEach((r, i) => {
      const ridge = r.rate / s.d.hbm_bandwidth;
      const c = colors[i % colors.length];
      el("polyline", { class: "roof " + s.cls, stroke: c, points: `${lx(xmin)},${ly(Math.max(ymin, xmin * s.d.hbm_bandwidth))} ${lx(Math.min(xmax, ridge))},${ly(Math.min(r.rate, xmax * s.d.hbm_bandwidth))} ${lx(xmax)},${ly(r.rate)}` }, svg);
      if (si_ === 0) {
        el("text", { x: W - Rm + 4, y: ly(r.rate) + 4, fill: c }, svg).textContent = `${r.name} ${si(r.rate, "FLOP/s")}`;
        if (ridge > xmin && ridge < xmax) el("text", { x: lx(ridge), y: ly(r.rate) - 4, "text-anchor": "middle", fill: c }, svg).textContent = `ridge ${ridge.toFixed(ridge < 10 ? 1 : 0)}`;
      }
    });
    for (const b of bws) {
      if (b.name === "HBM") continue;
      el("line", { class: "roof " + s.cls, stroke: "#888", x1: lx(xmin), y1: ly(Math.max(ymin, xmin * b.bw)), x2: lx(Math.min(xmax, ymax / b.bw)), y2: ly(Math.min(ymax, xmax * b.bw)) }, svg);
    }
    if (si_ === 0) {
      const x0 = xmin * 3;
      el("text", { x: lx(x0), y: ly(x0 * s.d.hbm_bandwidth) - 6 }, svg).textContent = `HBM ${si(s.d.hbm_bandwidth, "B/s")}`;
      if (s.d.l2_bandwidth) el("text", { x: lx(x0), y: ly(x0 * s.d.l2_bandwidth) - 6 }, svg).textContent = `L2 ${si(s.d.l2_bandwidth, "B/s")}`;
    }
  });
  if (dev.spec) el("text", { x: L + 4, y: Tm + 10 }, svg).textContent = "solid: calibrated roofs \u00b7 dashed: spec roofs";
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
  for (const n of costed) {
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
  const lg = $("legend");
  for (const [k, c] of [["compute", "#2f6fdf"], ["memory", "#e07b00"], ["latency", "#8a8f98"]]) {
    const s = h("span", undefined, lg);
    h("i", undefined, s).style.background = c;
    s.appendChild(document.createTextNode(k + "-bound"));
  }
  if (P) h("span", "red ring: measured, joined to its prediction; size: share of predicted time", lg);

  // ---- layer table ----------------------------------------------------------------------------
  const cols = [
    ["name", (n) => n.name], ["op", (n) => n.op], ["class", (n) => n.family || ""], ["bound", (n) => n.bound || n.status],
    ["FLOPs", (n) => n.flops || 0, si], ["bytes", (n) => (n.bytes_read_activations || 0) + (n.bytes_read_weights || 0) + (n.bytes_written || 0), bytes],
    ["AI", (n) => n.intensity || 0, (v) => v.toFixed(1)], ["predicted", (n) => n.predicted_s || 0, time],
  ];
  if (P) cols.push(["measured", (n) => (measured(n) ? n.measured.median_s : -1), (v) => (v < 0 ? "-" : time(v))],
    ["error %", (n) => (measured(n) ? 100 * n.measured.error : NaN), (v) => (isNaN(v) ? "-" : v.toFixed(1))]);
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
  for (const b of ["compute", "memory", "latency", "comm", "folded", "not costed"]) h("option", b, clsSel).value = b;
  const rowOf = new Map();
  const MAX_ROWS = 600;
  function renderTable() {
    const q = $("filter-text").value.toLowerCase(), op = opSel.value, cl = clsSel.value;
    let rows = nodes.filter((n) => (!q || n.name.toLowerCase().includes(q) || block(n.name).toLowerCase().includes(q)) &&
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
      h("div", undefined, row, "b").style.width = Math.max(1, 260 * value(it) / max) + "px";
      h("div", fmt(it), row, "t");
    }
  };
  bars($("by-op"), R.by_op.slice(0, 20), (s) => `${s.op} \u00d7${s.count}`, (s) => s.predicted_s, (s) => `${time(s.predicted_s)} (${(100 * s.predicted_s / total).toFixed(1)}%)`);
  bars($("by-block"), R.by_block.slice(0, 20), (s) => s.block, (s) => s.predicted_s, (s) => `${time(s.predicted_s)} \u00d7${s.count}`);

  // ---- transformer: phases and the generation sweep ------------------------------------------------
  if (R.transformer && R.transformer.generation) {
    const g = R.transformer.generation;
    $("sweep-section").style.display = "";
    $("phases").textContent = `prefill of ${g.prompt} tokens: ${time(g.ttft_s)} (time to first token) \u00b7 decode: ${time(g.tpot_first_s)} per token at context ${g.prompt + 1} \u2192 ${time(g.tpot_last_s)} at ${g.prompt + g.gen - 1} \u00b7 ${g.tokens_per_s.toFixed(1)} tokens/s`;
    const s = el("svg", { viewBox: "0 0 900 240", width: "100%", id: "sweep-svg" }, $("sweep"));
    const st = g.decode_step_s, n = st.length;
    if (n > 0) {
      const mx = Math.max(...st) * 1.1, sx = (i) => 70 + i / Math.max(n - 1, 1) * 800, sy = (v) => 210 - v / mx * 190;
      el("polyline", { points: st.map((v, i) => `${sx(i)},${sy(v)}`).join(" "), fill: "none", stroke: "#2f6fdf", "stroke-width": 1.5 }, s);
      el("text", { x: 70, y: 232 }, s).textContent = `context ${g.prompt + 1}`;
      el("text", { x: 870, y: 232, "text-anchor": "end" }, s).textContent = `context ${g.prompt + g.gen - 1}`;
      el("text", { x: 64, y: sy(mx / 1.1) + 4, "text-anchor": "end" }, s).textContent = time(mx / 1.1);
      el("text", { x: 64, y: 214, "text-anchor": "end" }, s).textContent = "0";
    }
  }

  // ---- memory timeline ---------------------------------------------------------------------------
  {
    const live = M.live_bytes_per_node || [];
    const base = M.weight_bytes + (R.transformer ? R.transformer.kv_bytes_batch || 0 : 0);
    const top = Math.max(M.device_memory_bytes, base + Math.max(0, ...live)) * 1.05;
    const s = el("svg", { viewBox: "0 0 900 260", width: "100%", id: "memory-svg" }, $("memory"));
    const n = Math.max(live.length, 1), mx = (i) => 80 + i / n * 790, my = (v) => 230 - v / top * 215;
    el("rect", { x: 80, y: my(M.weight_bytes), width: 790, height: 230 - my(M.weight_bytes), fill: "#c9d7f2" }, s);
    if (base > M.weight_bytes) el("rect", { x: 80, y: my(base), width: 790, height: my(M.weight_bytes) - my(base), fill: "#f2dcc9" }, s);
    if (live.length) {
      const pts = live.map((v, i) => `${mx(i)},${my(base + v)}`);
      el("polygon", { points: `${mx(0)},${my(base)} ${pts.join(" ")} ${mx(live.length - 1)},${my(base)}`, fill: "#7fb07f", opacity: 0.8 }, s);
      const pk = live.indexOf(Math.max(...live));
      el("circle", { cx: mx(pk), cy: my(base + live[pk]), r: 4, fill: "#b42318" }, s);
      el("text", { x: mx(pk) + 6, y: my(base + live[pk]) - 4 }, s).textContent = `peak ${bytes(live[pk])} at ${M.peak_node}`;
    }
    el("line", { x1: 80, x2: 870, y1: my(M.device_memory_bytes), y2: my(M.device_memory_bytes), stroke: "#b42318", "stroke-dasharray": "6 4" }, s);
    el("text", { x: 84, y: my(M.device_memory_bytes) - 4 }, s).textContent = `device memory ${bytes(M.device_memory_bytes)}`;
    el("text", { x: 84, y: 248 }, s).textContent = `execution order \u2192  (blue: weights ${bytes(M.weight_bytes)}` + (base > M.weight_bytes ? `, orange: KV cache ${bytes(base - M.weight_bytes)}` : "") + ", green: live activations)";
  }
  document.body.dataset.renderMs = (performance.now() - started).toFixed(0);

  // ---- self-test (#selftest): what the browser tests check, written into the page ----------------
  if (location.hash === "#selftest") {
    const out = { checks: {} };
    const ok = (name, cond, detail) => { out.checks[name] = { pass: !!cond, detail: detail }; };
    const pts = document.querySelectorAll("#roofline-svg circle.pt");
    ok("one_point_per_costed_node", pts.length === costed.length, `${pts.length} points, ${costed.length} costed nodes`);
    if (pts.length) {
      pts[0].dispatchEvent(new MouseEvent("mouseover", { clientX: 100, clientY: 100, bubbles: true }));
      ok("tooltip_on_hover", tip.style.display === "block" && tip.textContent.includes(costed[0].name), tip.textContent.split("\n")[0]);
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
    out.pass = Object.values(out.checks).every((c) => c.pass);
    $("selftest").textContent = JSON.stringify(out);
  }
})();
