// #/inbox: every open request the token may answer, across the tenant's sessions
// (GET /v1/inbox?state=open), each turn's requests answerable here with the forms of
// its own page (pending.js): an approval's Approve/Deny, a question's fields, a
// reconciliation's outcome. An answered turn leaves the inbox once the list reloads.

import { PAGE, api } from "./api.js";
import { enc, h, main, sessionHref, stateBadge, turnHref } from "./dom.js";
import { showError } from "./errors.js";
import { pendingInput } from "./pending.js";
import { crumbs, lifetime } from "./views.js";

export function inboxView() {
  crumbs(); // a page of the header's: no trail
  const gone = lifetime();
  const list = h("div", { cls: "inbox", testid: "inbox" });
  const count = h("span", { cls: "muted", testid: "inbox-count" });
  const more = h("button", { type: "button", testid: "inbox-more", hidden: true }, "More");
  const refresh = h("button", { type: "button", cls: "quiet", testid: "inbox-refresh" }, "Refresh");
  main.append(h("section", { testid: "inbox-view" },
    h("div", { cls: "heading" }, h("h1", {}, "Inbox"), count, h("span", { cls: "spacer" }), refresh),
    h("p", { cls: "muted" }, "The open requests you may answer, across the tenant's sessions."),
    list, h("div", { cls: "pager" }, more)));

  let next = null;
  let shown = 0;

  async function load(after) {
    const q = new URLSearchParams({ state: "open", limit: String(PAGE) });
    if (after) q.set("after", after);
    const page = await api("GET", "/v1/inbox?" + q);
    if (gone()) return;
    if (!after) {
      list.replaceChildren();
      shown = 0;
    }
    // one panel per turn: the requests of one wait are answered together
    const turns = new Map();
    for (const item of page.inputs) {
      const key = `${item.session_id}\u0000${item.turn_id}`;
      if (!turns.has(key)) turns.set(key, { ...item, requests: [] });
      turns.get(key).requests.push(item.request);
    }
    for (const t of turns.values()) list.append(panel(t));
    shown += page.inputs.length;
    if (!shown) list.append(h("p", { cls: "empty", testid: "inbox-empty" }, "Nothing waits for you."));
    count.textContent = `${shown} open`;
    next = page.next;
    more.hidden = !next;
    list.dataset.loaded = "true";
  }

  function panel(t) {
    const base = `/v1/sessions/${enc(t.session_id)}/turns/${enc(t.turn_id)}`;
    const slot = h("div", { cls: "panel pending" });
    // an answer is committed when its POST answers: reload, and the turn has left
    const form = pendingInput({ el: slot, base, gone, refresh: () => reload() });
    form.render({ state: t.state, pending_input: t.requests[0], pending_inputs: t.requests });
    return h("article", { cls: "inbox-item", testid: "inbox-item", "data-session-id": t.session_id, "data-turn-id": t.turn_id },
      h("p", { cls: "inbox-where" },
        h("a", { href: sessionHref(t.session_id), testid: "inbox-session" }, t.session_id), " / ",
        h("a", { href: turnHref(t.session_id, t.turn_id), testid: "inbox-turn" }, t.turn_id), " ",
        h("span", { cls: "muted" }, t.agent), " ", stateBadge(t.state, "inbox-state")),
      slot);
  }

  const reload = () => load(null).catch(showError);
  more.addEventListener("click", () => load(next).catch(showError));
  refresh.addEventListener("click", reload);
  reload();
}
