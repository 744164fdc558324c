// #/sessions: the tenant's sessions, newest first, a page at a time.

import { PAGE, api } from "./api.js";
import { emptyRow, h, main, row, sessionHref, stateBadge, table, turnHref } from "./dom.js";
import { showError } from "./errors.js";
import { fmtTime } from "./format.js";
import { crumbs, lifetime } from "./views.js";

export function sessionsView() {
  crumbs({ text: "Sessions" });
  const { el, body } = table("sessions", ["Session", "Agent", "State", "Active turn", "Head seq", "Created", "Updated"]);
  const more = h("button", { type: "button", testid: "sessions-more", hidden: true }, "Older sessions");
  const refresh = h("button", { type: "button", cls: "quiet", testid: "sessions-refresh" }, "Refresh");
  main.append(
    h("section", { testid: "sessions-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Sessions"), h("span", { cls: "muted" }, "newest first"), h("span", { cls: "spacer" }), refresh),
      el,
      h("div", { cls: "pager" }, more)),
  );
  const gone = lifetime();
  let next = null;

  async function load(after) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (after) q.set("after", after);
    const page = await api("GET", "/v1/sessions?" + q);
    if (gone()) return;
    if (!after) body.replaceChildren();
    for (const s of page.sessions) {
      body.append(
        row(
          [
            h("a", { href: sessionHref(s.session_id), testid: "session-link" }, s.session_id),
            s.agent,
            stateBadge(s.state, "session-state"),
            s.active_turn ? h("a", { href: turnHref(s.session_id, s.active_turn) }, s.active_turn) : "—",
            String(s.head_seq),
            fmtTime(s.created_at),
            fmtTime(s.updated_at),
          ],
          { testid: "session-row", "data-session-id": s.session_id },
        ),
      );
    }
    if (!after && page.sessions.length === 0) emptyRow(body, 7, "No sessions yet.");
    next = page.next;
    more.hidden = !next;
    el.dataset.loaded = "true";
  }

  more.addEventListener("click", () => load(next).catch(showError));
  refresh.addEventListener("click", () => load(null).catch(showError));
  load(null).catch(showError);
}
