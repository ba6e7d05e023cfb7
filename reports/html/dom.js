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
  return { SVGNS, $, el, h, apart };
})();
