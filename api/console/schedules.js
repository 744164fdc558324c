// #/schedules: the tenant's schedules (docs/flow-control.md), by id, a page at a time:
// when each ticks (a cron expression, an interval, or once: a turn's follow-up is one),
// its next and last tick, how many turns it admitted, where a follow-up came from;
// Pause / Resume, and Delete (a second press confirms it: no browser dialog).

import { PAGE, api } from "./api.js";
import { emptyRow, enc, h, main, row, table, turnHref } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { fmtTime } from "./format.js";
import { crumbs, lifetime } from "./views.js";

export function schedulesView() {
  crumbs({ text: "Schedules" });
  const { el, body } = table("schedules", ["Schedule", "Agent", "When", "Next", "Last", "Fired", "State", "From", ""]);
  const more = h("button", { type: "button", testid: "schedules-more", hidden: true }, "More schedules");
  const refresh = h("button", { type: "button", cls: "quiet", testid: "schedules-refresh" }, "Refresh");
  main.append(
    h("section", { testid: "schedules-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Schedules"), h("span", { cls: "muted" }, "by id"), h("span", { cls: "spacer" }), refresh),
      el,
      h("div", { cls: "pager" }, more)),
  );
  const gone = lifetime();
  let next = null;

  async function load(after) {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (after) q.set("after", after);
    const page = await api("GET", "/v1/schedules?" + q);
    if (gone()) return;
    if (!after) body.replaceChildren();
    for (const s of page.schedules) body.append(scheduleRow(s));
    if (!after && page.schedules.length === 0) emptyRow(body, 9, "No schedules.");
    next = page.next;
    more.hidden = !next;
    el.dataset.loaded = "true";
  }

  function scheduleRow(s) {
    const base = "/v1/schedules/" + enc(s.schedule_id);
    const toggle = h("button", { type: "button", testid: s.paused ? "schedule-resume" : "schedule-pause" }, s.paused ? "Resume" : "Pause");
    const remove = h("button", { type: "button", cls: "danger", testid: "schedule-delete" }, "Delete");
    const tr = row(
      [
        h("code", {}, s.schedule_id),
        s.agent,
        when(s),
        s.next_at ? fmtTime(s.next_at) : "—",
        s.last_tick ? fmtTime(s.last_tick) : "—",
        String(s.fired),
        h("span", { cls: "state", testid: "schedule-state" }, state(s)),
        origin(s),
        h("td", { cls: "actions" }, toggle, remove),
      ],
      { testid: "schedule-row", "data-schedule-id": s.schedule_id, "data-paused": String(s.paused) },
    );
    toggle.addEventListener("click", async () => {
      clearError();
      toggle.disabled = true;
      try {
        const changed = await api("POST", base + (s.paused ? "/resume" : "/pause"));
        if (!gone()) tr.replaceWith(scheduleRow(changed));
      } catch (err) {
        toggle.disabled = false;
        if (!gone()) showError(err);
      }
    });
    remove.addEventListener("click", async () => {
      if (remove.dataset.armed !== "true") {
        remove.dataset.armed = "true";
        remove.textContent = "Confirm delete";
        return;
      }
      clearError();
      remove.disabled = true;
      try {
        await api("DELETE", base);
        if (!gone()) tr.remove();
      } catch (err) {
        remove.disabled = false;
        if (!gone()) showError(err);
      }
    });
    return tr;
  }

  more.addEventListener("click", () => load(next).catch(showError));
  refresh.addEventListener("click", () => load(null).catch(showError));
  load(null).catch(showError);
}

function when(s) {
  if (s.cron) return `${s.cron} (${s.timezone})`;
  if (s.every_seconds !== null && s.every_seconds !== undefined) return `every ${s.every_seconds} s`;
  return `once at ${fmtTime(s.at)}`;
}

function state(s) {
  if (s.paused) return "paused";
  return s.next_at ? "active" : "done";
}

function origin(s) {
  const o = s.origin;
  if (!o || typeof o !== "object" || !o.session_id || !o.turn_id) return "—";
  return h("a", { href: turnHref(o.session_id, o.turn_id), testid: "schedule-origin" }, `turn ${o.turn_id}, step ${o.step}`);
}
