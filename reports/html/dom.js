"use strict";
// DOM helpers shared by the report's scripts (report.js, compare.js).
window.rooflensDom = (function () {
  const SVGNS = "http://www.w3.org/2000/svg";  // a namespace name, not a URL that is fetched
  const $ = (id) => document.getElementById(id);
  // An SVG element with attributes, appended to `parent` when given.
  const el = (tag, attrs, parent) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  // An HTML element with text and class, appended to `parent` when given.
  const h = (tag, text, parent, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  };
  // Labels at heights `y` (top to bottom), each given `ly`: its own y where that leaves `gap`
  // pixels to the label above, else pushed down just far enough.
  const apart = (labels, gap) => {
    const sorted = labels.slice().sort((p, q) => p.y - q.y);
    sorted.forEach((r, i) => { r.ly = i ? Math.max(r.y, sorted[i - 1].ly + gap) : r.y; });
    return sorted;
  };
  const si = (v, unit = "") => {
    if (v === null || v === undefined || !isFinite(v)) return "-";
    if (v === 0) return "0" + (unit ? " " + unit : "");
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
  return { SVGNS, $, el, h, apart, si, bytes, time };
})();
