"use strict";
// rooflens HTML report, training part: renders R.training (docs/json.md) when the result has it:
// the step split into forward, backward, recompute, loss, optimizer, communication and the GPU
// waiting on the host; the loss and optimizer rows; and whether the host bounds the step. The
// memory through the step is the report's memory chart.
(function () {
  const R = JSON.parse(document.getElementById("rooflens-data").textContent);
  const Tr = R.training;
  if (!Tr) return;
  const { $, el, h, si, bytes, time } = window.rooflensDom;
  $("training-section").style.display = "";
  $("training-head").textContent =
    `${Tr.precision} \u00b7 optimizer ${Tr.optimizer} \u00b7 recompute ${Tr.recompute} \u00b7 batch ${Tr.batch}` +
    (Tr.seq ? ` x ${Tr.seq} tokens` : "") + (Tr.grad_accum > 1 ? ` \u00b7 ${Tr.grad_accum} micro-batches` : "") +
    (Tr.zero > 0 ? ` \u00b7 ZeRO-${Tr.zero} over ${Tr.dp} GPUs` : "") + " \u00b7 all figures per step";

  // ---- the split: one stacked bar, the step's time from left to right ------------------------------
  const parts = [["forward", Tr.forward_s, "#2f6fdf"], ["backward", Tr.backward_s, "#e07b00"], ["recompute", Tr.recompute_s, "#c2255c"],
                 ["loss", Tr.loss_s, "#74b816"], ["optimizer", Tr.optimizer_s, "#0b7285"], ["communication", Tr.communication_s, "#7b3fbf"],
                 ["GPU waiting on the host", Tr.host_modelled ? Tr.gpu_wait_s : 0, "#8a8f98"]];
  const step = Tr.step_time_s || 1;
  const W = 900, X0 = 10, X1 = 890, bar = el("svg", { viewBox: `0 0 ${W} 74`, width: "100%", id: "training-split-svg" }, $("training-split"));
  let x = X0;
  for (const [name, s, color] of parts) {
    if (!(s > 0)) continue;
    const w = (s / step) * (X1 - X0);
    const r = el("rect", { class: "split-part", x, y: 8, width: Math.max(w, 1), height: 26, fill: color }, bar);
    el("title", {}, r).textContent = `${name}: ${time(s)} (${(100 * s / step).toFixed(1)}% of the step)`;
    x += w;
  }
  el("text", { x: X0, y: 52 }, bar).textContent = `step ${time(Tr.step_time_s)} = ` +
    (Tr.host_modelled ? `kernels ${time(Tr.gpu_busy_s)} + GPU waiting on the host ${time(Tr.gpu_wait_s)}` : "the kernels back to back (the host not modelled)");
  const legend = h("div", undefined, $("training-split"), "legend");
  const row = h("div", undefined, legend, "row");
  for (const [name, s, color] of parts) {
    if (!(s > 0)) continue;
    const span = h("span", undefined, row);
    h("i", undefined, span).style.background = color;
    span.appendChild(document.createTextNode(`${name} ${time(s)} (${(100 * s / step).toFixed(1)}%)`));
  }

  // ---- the loss and optimizer rows ----------------------------------------------------------------
  const head = $("training-thead"), body = $("training-tbody");
  const cols = ["step", "phase", "FLOPs", "bytes", "time", "% of step", "launches", "host"];
  const tr = h("tr", undefined, head);
  for (const c of cols) h("th", c, tr);
  for (const s of Tr.steps) {
    const r = h("tr", undefined, body);
    h("td", s.name, r);
    h("td", s.phase, r);
    h("td", si(s.flops, ""), r, "n");
    h("td", bytes(s.bytes), r, "n");
    h("td", time(s.seconds), r, "n");
    h("td", (100 * s.seconds / step).toFixed(1), r, "n");
    h("td", String(s.launches), r, "n");
    h("td", s.host_s === null ? "not modelled" : time(s.host_s), r, "n");
    if (s.note) r.title = s.note;
  }

  // ---- is the host the bound? ----------------------------------------------------------------------
  const host = $("training-host");
  if (!Tr.host_modelled)
    host.textContent = `${Tr.kernels.toLocaleString("en")} kernels a step; the host's time is not modelled (the device profile has no eager host costs), so the step is the kernels back to back.`;
  else {
    const bound = Tr.host_s > Tr.gpu_busy_s;
    host.textContent = `Eager PyTorch issues ${Tr.kernels.toLocaleString("en")} kernels in ${time(Tr.host_s)}` +
      (Tr.host_syncs > 0 ? `, waiting for the GPU ${Tr.host_syncs} times` : "") +
      (bound ? `: the host bounds the step (the GPU waits ${time(Tr.gpu_wait_s)} of it).` : `: the GPU bounds the step (kernels ${time(Tr.gpu_busy_s)}).`);
    if (bound) host.className = "sub warn";
  }
  for (const n of Tr.notes || []) h("li", n, $("training-notes"));
})();
