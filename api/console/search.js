// #/search: find turns across the tenant's sessions, or sessions, by state, agent,
// version, project, metadata, error code and time (GET /v1/turns, GET /v1/sessions;
// docs/search.md). The query lives in the fragment (#/search?kind=turns&state=failed&
// metadata=customer%3Dacme), so a search can be bookmarked and shared; submitting the
// form only changes the fragment, which runs the search.

import { PAGE, api } from "./api.js";
import { emptyRow, h, main, row, sessionHref, stateBadge, table, turnHref } from "./dom.js";
import { showError } from "./errors.js";
import { clip, fmtTime } from "./format.js";
import { SESSION_STATES, TURN_STATES } from "./states.js";
import { crumbs, lifetime } from "./views.js";

const FILTERS = ["agent", "agent_version", "project", "error", "created_since", "created_until", "updated_since", "updated_until"];
const TURN_ONLY = new Set(["agent_version", "error"]);
const TIMES = new Set(["created_since", "created_until", "updated_since", "updated_until"]);

function labels(metadata) {
  return Object.entries(metadata || {}).map(([k, v]) => `${k}=${v}`).join(" ");
}

/** A time input's value (local, no offset) as RFC 3339 with one, and back. */
const toIso = (local) => (local ? new Date(local).toISOString() : "");
function toLocal(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

function field(name, label, input) {
  input.id = "search-" + name;
  input.dataset.testid = "search-" + name;
  return h("div", { cls: "field", "data-filter": name }, h("label", { for: input.id }, label), input);
}

export function searchView(query) {
  crumbs(); // a page of the header's: no trail
  const gone = lifetime();
  const kind = query.get("kind") === "sessions" ? "sessions" : "turns";
  const kindSelect = h("select", {}, h("option", { value: "turns" }, "turns"), h("option", { value: "sessions" }, "sessions"));
  kindSelect.value = kind;
  const chosen = new Set(query.getAll("state"));
  const states = h("fieldset", { cls: "states", testid: "search-states" }, h("legend", {}, "State (any of)"),
    (kind === "sessions" ? SESSION_STATES : TURN_STATES).map((s) => {
      const box = h("input", { type: "checkbox", value: s, testid: "search-state-" + s, id: "state-" + s });
      box.checked = chosen.has(s);
      return h("label", { for: "state-" + s, cls: "check" }, box, " ", s);
    }));
  const inputs = {};
  for (const name of FILTERS) {
    const input = h("input", { type: TIMES.has(name) ? "datetime-local" : "text", autocomplete: "off", spellcheck: "false" });
    input.value = TIMES.has(name) ? toLocal(query.get(name) || "") : query.get(name) || "";
    inputs[name] = input;
  }
  const meta = h("textarea", { rows: 3, placeholder: "customer=acme\nchannel=email", spellcheck: "false" });
  meta.value = query.getAll("metadata").join("\n");
  const form = h("form", { cls: "search-form", testid: "search-form" },
    field("kind", "Find", kindSelect),
    states,
    h("div", { cls: "search-fields" },
      field("agent", "Agent", inputs.agent),
      kind === "turns" ? field("agent_version", "Version", inputs.agent_version) : null,
      field("project", "Project", inputs.project),
      kind === "turns" ? field("error", "Error code", inputs.error) : null,
      field("metadata", "Metadata (key=value, one a line: all must match)", meta),
      field("created_since", "Created since", inputs.created_since),
      field("created_until", "Created before", inputs.created_until),
      field("updated_since", "Updated since", inputs.updated_since),
      field("updated_until", "Updated before", inputs.updated_until)),
    h("div", { cls: "buttons" }, h("button", { type: "submit", testid: "search-submit" }, "Search"),
      " ", h("a", { href: "#/search", cls: "muted" }, "clear")));
  kindSelect.addEventListener("change", () => submit());
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    submit();
  });

  function submit() {
    const q = new URLSearchParams({ kind: kindSelect.value });
    for (const box of states.querySelectorAll("input:checked")) q.append("state", box.value);
    for (const name of FILTERS) {
      if (kindSelect.value === "sessions" && TURN_ONLY.has(name)) continue;
      const v = TIMES.has(name) ? toIso(inputs[name].value) : inputs[name].value.trim();
      if (v) q.set(name, v);
    }
    for (const line of meta.value.split("\n").map((l) => l.trim()).filter(Boolean)) q.append("metadata", line);
    const target = "#/search?" + q;
    if (location.hash === target) run(null);
    else location.hash = target;
  }

  const results = kind === "turns"
    ? table("search-results", ["Session", "Turn", "State", "Agent", "Created", "Metadata", "Outcome"])
    : table("search-results", ["Session", "Agent", "State", "Project", "Created", "Metadata"]);
  const count = h("span", { cls: "muted", testid: "search-count" });
  const more = h("button", { type: "button", testid: "search-more", hidden: true }, "More");
  main.append(h("section", { testid: "search-view" },
    h("div", { cls: "heading" }, h("h1", {}, "Search"), h("span", { cls: "muted" }, "newest first")),
    form, h("h2", {}, "Results ", count), results.el, h("div", { cls: "pager" }, more)));

  let next = null;
  let shown = 0;
  async function run(after) {
    const q = new URLSearchParams();
    for (const [k, v] of query) if (k !== "kind") q.append(k, v);
    q.set("limit", String(PAGE));
    if (after) q.set("after", after);
    const page = await api("GET", (kind === "turns" ? "/v1/turns?" : "/v1/sessions?") + q);
    if (gone()) return;
    if (!after) {
      results.body.replaceChildren();
      shown = 0;
    }
    const items = kind === "turns" ? page.turns : page.sessions;
    for (const x of items) results.body.append(kind === "turns" ? turnRow(x) : sessionRow(x));
    shown += items.length;
    if (!shown) emptyRow(results.body, kind === "turns" ? 7 : 6, "Nothing matches.");
    count.textContent = `${shown}${page.next ? "+" : ""} found`;
    next = page.next;
    more.hidden = !next;
    results.el.dataset.loaded = "true";
  }
  more.addEventListener("click", () => run(next).catch(showError));
  run(null).catch((err) => {
    results.el.dataset.loaded = "error";
    showError(err);
  });
}

function turnRow(t) {
  const outcome = t.error ? `${t.error.code ?? "error"}` : t.result && typeof t.result.text === "string" ? t.result.text : "";
  return row(
    [
      h("a", { href: sessionHref(t.session_id) }, t.session_id),
      h("a", { href: turnHref(t.session_id, t.turn_id), testid: "result-link" }, t.turn_id),
      stateBadge(t.state, "result-state"),
      t.agent_version ? `${t.agent} v${t.agent_version}` : t.agent,
      fmtTime(t.created_at),
      h("code", { testid: "result-metadata" }, labels(t.metadata)),
      clip(outcome, 80),
    ],
    { testid: "result-row", "data-session-id": t.session_id, "data-turn-id": t.turn_id },
  );
}

function sessionRow(s) {
  return row(
    [
      h("a", { href: sessionHref(s.session_id), testid: "result-link" }, s.session_id),
      s.agent,
      stateBadge(s.state, "result-state"),
      s.project ?? "—",
      fmtTime(s.created_at),
      h("code", { testid: "result-metadata" }, labels(s.metadata)),
    ],
    { testid: "result-row", "data-session-id": s.session_id },
  );
}
