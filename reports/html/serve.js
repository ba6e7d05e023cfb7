"use strict";
// rooflens HTML report, `serve` part: renders a `rooflens serve` result (schema rooflens-serve,
// docs/serving.md): the deployment's cards, the latency-throughput curve over the swept
// concurrencies (time per output token against output tokens/s per GPU, and the time to the
// first token against concurrency), and the simulated steps on a time axis.
(function () {
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  if (R.schema !== "rooflens-serve") return;
  const started = performance.now();
  const { $, el, h, si, bytes, time } = window.rooflensDom;
  for (const s of document.querySelectorAll("section.analysis")) s.style.display = "none";
  $("serve-section").style.display = "";
  const S = R.serving, E = R.engine, P = R.plan, M = R.memory_per_gpu;
  const model = R.model.split("/").slice(-2).join("/");
  $("title").textContent = "rooflens serve \u2014 " + model;
  document.title = "rooflens serve \u2014 " + model;
  $("subtitle").textContent = `${R.device} \u00b7 ${P.gpus} GPU${P.gpus > 1 ? "s" : ""} (tp ${P.tp}, pp ${P.pp}, dp ${P.dp}${P.ep > 1 ? ", ep " + P.ep + (P.attention_dp ? " with data-parallel attention" : "") : ""}) \u00b7 engine ${E.name} \u00b7 schema ${R.schema_version}`;

  // ---- cards ---------------------------------------------------------------------------------
  const card = (k, v, s, warn) => {
    const c = h("div", undefined, $("cards"), "card");
    h("div", k, c, "k");
    h("div", v, c, "v" + (warn ? " warn" : ""));
    if (s) h("div", s, c, "s");
  };
  const lengths = (r) => (r.lo === r.hi ? `${r.lo}` : `${r.lo}-${r.hi}`);
  card("workload", `${lengths(S.isl)} in / ${lengths(S.osl)} out`,
    S.concurrency ? `closed loop, ${S.concurrency} in flight, ${S.requests} requests` : S.rate ? `open loop, ${S.rate} requests/s, ${S.requests} requests` : "no run: capacity only");
  if (S.ttft_mean_s !== undefined) {
    card("time to first token", time(S.ttft_mean_s), `p50 ${time(S.ttft_p50_s)} \u00b7 p99 ${time(S.ttft_p99_s)}`);
    card("time per output token", time(S.tpot_mean_s), `p50 ${time(S.tpot_p50_s)} \u00b7 p99 ${time(S.tpot_p99_s)}`);
    card("throughput", `${si(S.throughput_tokens_per_s, "tok/s")}`, `${si(S.throughput_tokens_per_s_per_gpu, "tok/s")} per GPU \u00b7 ${S.requests_per_s.toFixed(2)} requests/s`);
    card("sustainable", S.sustainable ? "yes" : "no", S.sustainable ? `${S.preemptions} preemptions` : "the queue grows without bound", !S.sustainable);
  }
  card("KV cache", `${si(S.kv_capacity_tokens, "tokens")}`, `${bytes(M.kv_cache_bytes)} a GPU \u00b7 ${S.max_concurrency_without_preemption} sequences without preemption`);
  card("memory per GPU", `${bytes(M.weight_bytes)} weights`, `+ ${bytes(M.activation_bytes)} activations + ${bytes(M.kv_cache_bytes)} KV of ${bytes(M.device_bytes)}`);
  card("engine knobs", `${E.max_batched_tokens} tokens a step`, `${E.max_seqs_per_scheduler} sequences, block ${E.block_size}, chunked prefill ${E.chunked_prefill ? "on" : "off"}, CUDA graphs ${E.cuda_graphs ? "on" : "off"}`);

  // ---- axes ----------------------------------------------------------------------------------
  // A plot area in `svg` at (x0, y0) of w x h with linear or log scales; returns the mappers.
  const axes = (svg, box, xs, ys, xlabel, ylabel, xfmt, yfmt) => {
    const [x0, y0, w, hh] = box;
    const scale = (lo, hi, log, a, b) => (v) => {
      const t = log ? (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo) || 1) : (v - lo) / (hi - lo || 1);
      return a + t * (b - a);
    };
    const X = scale(xs.lo, xs.hi, xs.log, x0, x0 + w), Y = scale(ys.lo, ys.hi, ys.log, y0 + hh, y0);
    const g = el("g", { class: "axis" }, svg);
    el("line", { x1: x0, y1: y0 + hh, x2: x0 + w, y2: y0 + hh }, g);
    el("line", { x1: x0, y1: y0, x2: x0, y2: y0 + hh }, g);
    const ticks = (r) => r.log ? r.ticks : [0, 0.25, 0.5, 0.75, 1].map((t) => r.lo + t * (r.hi - r.lo));
    for (const v of ticks(xs)) {
      el("line", { x1: X(v), y1: y0 + hh, x2: X(v), y2: y0 + hh + 4 }, g);
      el("text", { x: X(v), y: y0 + hh + 16, "text-anchor": "middle" }, g).textContent = xfmt(v);
    }
    for (const v of ticks(ys)) {
      el("line", { x1: x0 - 4, y1: Y(v), x2: x0, y2: Y(v) }, g);
      el("text", { x: x0 - 6, y: Y(v) + 4, "text-anchor": "end" }, g).textContent = yfmt(v);
    }
    el("text", { x: x0 + w / 2, y: y0 + hh + 32, "text-anchor": "middle" }, g).textContent = xlabel;
    el("text", { x: x0 - 52, y: y0 + hh / 2, "text-anchor": "middle", transform: `rotate(-90 ${x0 - 52} ${y0 + hh / 2})` }, g).textContent = ylabel;
    return { X, Y };
  };
  const span = (vals, pad) => {
    const lo = Math.min(...vals), hi = Math.max(...vals);
    return lo === hi ? { lo: lo * (1 - pad) || 0, hi: hi * (1 + pad) || 1 } : { lo: Math.max(0, lo - pad * (hi - lo)), hi: hi + pad * (hi - lo) };
  };
  const ms = (v) => (v * 1e3).toFixed(v < 0.01 ? 1 : 0) + " ms";

  // ---- latency-throughput curve -----------------------------------------------------------------
  const sweep = R.sweep || [];
  const curve = $("serve-curve");
  if (sweep.length === 0) {
    h("div", "No sweep in this result: --sweep-concurrency 1,2,4,... draws the latency-throughput curve.", curve, "sub");
  } else {
    const svg = el("svg", { viewBox: "0 0 900 300", width: "100%", id: "serve-curve-svg" }, curve);
    const tput = sweep.map((p) => p.throughput_tokens_per_s_per_gpu), tpot = sweep.map((p) => p.tpot_mean_s);
    const a = axes(svg, [70, 20, 330, 230], span(tput, 0.08), span(tpot, 0.08), "output tokens/s per GPU", "time per output token",
      (v) => si(v, ""), ms);
    const line = sweep.map((p, i) => `${i ? "L" : "M"}${a.X(tput[i]).toFixed(1)},${a.Y(tpot[i]).toFixed(1)}`).join(" ");
    el("path", { d: line, class: "serve-line" }, svg);
    sweep.forEach((p, i) => {
      el("circle", { cx: a.X(tput[i]), cy: a.Y(tpot[i]), r: 4, class: "serve-pt" + (p.sustainable ? "" : " unsustainable") }, svg);
      el("text", { x: a.X(tput[i]) + 6, y: a.Y(tpot[i]) - 6, class: "serve-label" }, svg).textContent = p.concurrency;
    });
    const conc = sweep.map((p) => p.concurrency), ttft = sweep.map((p) => p.ttft_p99_s).concat(sweep.map((p) => p.ttft_mean_s));
    const lo = Math.min(...conc), hi = Math.max(...conc);
    const ticks = [];
    for (let c = 1; c <= hi * 1.01; c *= 2) if (c >= lo / 1.01) ticks.push(c);
    const b = axes(svg, [540, 20, 330, 230], { lo: lo / 1.2, hi: hi * 1.2, log: true, ticks }, span(ttft, 0.08),
      "concurrency (requests in flight)", "time to first token", (v) => String(Math.round(v)), ms);
    for (const [key, cls] of [["ttft_mean_s", "serve-line"], ["ttft_p99_s", "serve-line p99"]]) {
      el("path", { d: sweep.map((p, i) => `${i ? "L" : "M"}${b.X(p.concurrency).toFixed(1)},${b.Y(p[key]).toFixed(1)}`).join(" "), class: cls }, svg);
      sweep.forEach((p) => el("circle", { cx: b.X(p.concurrency), cy: b.Y(p[key]), r: 3, class: "serve-pt" + (key === "ttft_p99_s" ? " p99" : "") }, svg));
    }
    h("div", "Left: each point one swept concurrency (labelled), closed loop. Right: the mean (solid) and p99 (dashed, open points) time to the first token. A red ring: that concurrency's queue grows without bound.", curve, "sub");
  }

  // ---- steps on a time axis ---------------------------------------------------------------------
  const steps = (R.timeline && R.timeline.steps) || [];
  const tl = $("serve-timeline");
  if (steps.length === 0) {
    h("div", "No steps: a run (--concurrency or --rate) draws its steps.", tl, "sub");
  } else {
    const shown = steps.slice(0, 4000);  // a page stays light; the JSON holds them all
    const svg = el("svg", { viewBox: "0 0 900 220", width: "100%", id: "serve-timeline-svg" }, tl);
    const end = Math.max(...shown.map((s) => s[0] + s[1]));
    // A multiple of 4, so that the quarter ticks are whole sequences.
    const most = 4 * Math.ceil(Math.max(1, ...shown.map((s) => Math.max(s[3], s[4]))) / 4);
    const a = axes(svg, [70, 10, 800, 160], { lo: 0, hi: end }, { lo: 0, hi: most }, "simulated time", "sequences",
      (v) => time(v), (v) => String(Math.round(v)));
    for (const [start, secs, prefill, decode] of shown) {
      const kind = prefill > 0 && decode > 0 ? "mixed" : prefill > 0 ? "prefill" : "decode";
      const height = Math.max(1, a.Y(0) - a.Y(Math.max(decode, prefill > 0 ? 1 : 0)));
      el("rect", { x: a.X(start), y: a.Y(0) - height, width: Math.max(0.5, a.X(start + secs) - a.X(start)), height, class: "step " + kind }, svg);
    }
    el("path", { d: shown.map((s, i) => `${i ? "L" : "M"}${a.X(s[0]).toFixed(1)},${a.Y(s[4]).toFixed(1)}`).join(" "), class: "waiting" }, svg);
    const mix = S.step_mix || {};
    h("div", `Each bar one step, as tall as the sequences it decodes: decode only (grey), prefill only (blue), prefill chunks mixed with decodes (orange); the line: requests waiting. ` +
      (P.schedulers > 1 ? `The first of ${P.schedulers} schedulers${P.attention_dp ? " (one data-parallel attention rank; the ranks step together)" : ""}. ` : "") +
      (steps.length > shown.length ? `First ${shown.length} of ${steps.length} steps. ` : "") +
      (mix.mean_step_s ? `Mean step ${time(mix.mean_step_s)}, mean decode batch ${mix.mean_decode_batch.toFixed(1)}.` : ""), tl, "sub");
  }
  for (const n of R.notes || []) h("li", n, $("serve-notes"));
  for (const n of E.sources || []) h("li", `${E.name}'s default: ${n}`, $("serve-notes"));
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));

  // ---- self-test (#selftest) ------------------------------------------------------------------
  if (location.hash === "#selftest") {
    const out = { checks: {} };
    const ok = (name, pass, detail) => { out.checks[name] = { pass: !!pass, detail: String(detail) }; };
    ok("one_point_per_swept_concurrency", document.querySelectorAll("#serve-curve-svg .serve-pt:not(.p99)").length === 2 * sweep.length,
      `${document.querySelectorAll("#serve-curve-svg .serve-pt").length} points for ${sweep.length} concurrencies`);
    ok("steps_drawn", document.querySelectorAll("#serve-timeline-svg rect.step").length === Math.min(steps.length, 4000), `${steps.length} steps`);
    ok("no_errors", window.__rooflensErrors.length === 0, window.__rooflensErrors.join(" | "));
    ok("no_network_requests", performance.getEntriesByType("resource").length === 0, "");
    const spills = [];
    for (const e of document.querySelectorAll("main *")) {
      if (e.closest("svg") || e.id === "selftest" || !e.getClientRects().length) continue;
      const p = e.parentElement, r = e.getBoundingClientRect(), q = p.getBoundingClientRect();
      if (r.left < q.left - 1 || r.right > q.right + 1) spills.push(`${e.tagName.toLowerCase()} "${(e.textContent || "").slice(0, 40)}"`);
    }
    ok("nothing_overflows", spills.length === 0, spills.slice(0, 5).join("; ") || "none");
    out.pass = Object.values(out.checks).every((c) => c.pass);
    $("selftest").textContent = JSON.stringify(out);
  }
})();
