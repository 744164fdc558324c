// #/sessions/{sid}: one session's summary, its turns over time (waterfall.js) and as a
// table, newest first.

import { ApiError, PAGE, api } from "./api.js";
import { deleteControl, tombstoneFacts } from "./deletion.js";
import { emptyRow, enc, facts, h, main, row, stateBadge, table, turnHref } from "./dom.js";
import { showError } from "./errors.js";
import { fmtTime } from "./format.js";
import { crumbs, lifetime } from "./views.js";
import { sessionTimeline } from "./waterfall.js";

export function sessionView(sid) {
  crumbs({ text: "Sessions", href: "#/sessions" }, { text: sid });
  const summary = h("dl", { cls: "facts", testid: "session-summary" });
  const { el, body } = table("turns", ["Turn", "State", "Agent", "Attempt", "Waiting for", "Created", "Updated"]);
  const more = h("button", { type: "button", testid: "turns-more", hidden: true }, "Older turns");
  const refresh = h("button", { type: "button", cls: "quiet", testid: "session-refresh" }, "Refresh");
  const overTime = h("div", { cls: "over-time", testid: "session-timeline-slot" });
  let loaded = []; // the turns shown: the timeline draws them all
  const turnsPart = h("div", {},
    h("h2", {}, "Over time ", h("span", { cls: "muted" }, "each turn from its admission to its end")),
    overTime,
    h("h2", {}, "Turns ", h("span", { cls: "muted" }, "newest first")),
    el, h("div", { cls: "pager" }, more));
  const deletion = deleteControl(sid, (tombstone) => deleted(tombstone));
  main.append(
    h("section", { testid: "session-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Session ", h("code", {}, sid)), h("span", { cls: "spacer" }),
        deletion.start, " ", refresh),
      deletion.ask,
      summary,
      turnsPart),
  );
  const gone = lifetime();
  let next = null;

  // deleted (now, or before): its tombstone in place of what it held
  function deleted(tombstone) {
    summary.dataset.deleted = "true";
    summary.replaceChildren(...tombstoneFacts(tombstone));
    turnsPart.hidden = true;
    deletion.start.hidden = true;
  }

  async function loadSummary() {
    const s = await api("GET", `/v1/sessions/${enc(sid)}`);
    if (gone()) return;
    summary.replaceChildren(
      ...facts([
        ["Agent", s.agent],
        ["State", stateBadge(s.state, "session-state")],
        ["Active turn", s.active_turn ? h("a", { href: turnHref(sid, s.active_turn) }, s.active_turn) : "—"],
        ["Head seq", String(s.head_seq)],
        ["Created", fmtTime(s.created_at)],
        ["Updated", fmtTime(s.updated_at)],
      ]),
    );
  }

  async function loadTurns(after) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (after) q.set("after", after);
    const page = await api("GET", `/v1/sessions/${enc(sid)}/turns?` + q);
    if (gone()) return;
    if (!after) {
      body.replaceChildren();
      loaded = [];
    }
    loaded.push(...page.turns);
    overTime.replaceChildren(
      sessionTimeline(loaded, { width: overTime.clientWidth || 1000, href: (t) => turnHref(sid, t.turn_id) }));
    for (const t of page.turns) {
      body.append(
        row(
          [
            h("a", { href: turnHref(sid, t.turn_id), testid: "turn-link" }, t.turn_id),
            stateBadge(t.state, "turn-row-state"),
            t.agent,
            String(t.attempt),
            t.pending_input && !t.pending_input.resolved ? t.pending_input.kind : "—",
            fmtTime(t.created_at),
            fmtTime(t.updated_at),
          ],
          { testid: "turn-row", "data-turn-id": t.turn_id },
        ),
      );
    }
    if (!after && page.turns.length === 0) emptyRow(body, 7, "No turns.");
    next = page.next;
    more.hidden = !next;
    el.dataset.loaded = "true";
  }

  const all = () =>
    Promise.all([loadSummary(), loadTurns(null)]).catch((err) => {
      if (err instanceof ApiError && err.code === "session_deleted" && !gone()) {
        deleted({ ...err.problem, deleted_by: null });
        return;
      }
      showError(err);
    });
  more.addEventListener("click", () => loadTurns(next).catch(showError));
  refresh.addEventListener("click", all);
  all();
}
