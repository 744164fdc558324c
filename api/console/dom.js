// Building the page: elements, tables, facts, links and state badges. Data is
// untrusted: it becomes text nodes and attributes, never HTML.

import { SESSION_STATES } from "./states.js";

export const $ = (id) => document.getElementById(id);
export const main = $("main");
export const enc = encodeURIComponent;

/** An element: props set as attributes (text: textContent), children as text nodes. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") el.textContent = String(value);
    else if (key === "testid") el.dataset.testid = String(value);
    else if (key === "cls") el.className = String(value);
    else if (key === "on") {
      for (const [name, fn] of Object.entries(value)) el.addEventListener(name, fn);
    } else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export const sessionHref = (sid) => "#/sessions/" + enc(sid);
export const turnHref = (sid, tid) => sessionHref(sid) + "/turns/" + enc(tid);

/** A session's or a turn's state; one the server did not declare shows as "other". */
export function stateBadge(state, testid) {
  const known = SESSION_STATES.includes(state) ? state : "other";
  return h("span", { cls: "state state-" + known, testid, "data-state": known }, state);
}

export function table(testid, headings) {
  const body = h("tbody");
  const el = h(
    "table",
    { testid },
    h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))),
    body,
  );
  return { el, body };
}

export function row(cells, props) {
  return h("tr", props || {}, cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))));
}

export function emptyRow(body, columns, text) {
  body.append(h("tr", { cls: "empty" }, h("td", { colspan: columns }, text)));
}

export function facts(pairs) {
  return pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]);
}
