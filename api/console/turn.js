// #/sessions/{sid}/turns/{tid}: one turn. Its timeline (steps, attempts, waits), its
// result or error, its open request (pending.js), its journal (live.js), Cancel, and
// a Re-run button per step (a new turn reusing the steps before it: docs/reruns.md).

import { api } from "./api.js";
import { emptyRow, enc, facts, h, main, row, sessionHref, stateBadge, table, turnHref } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { fmtCost, fmtMs, fmtTime, fmtUsage, json } from "./format.js";
import { liveEvents } from "./live.js";
import { pendingInput } from "./pending.js";
import { TERMINAL_STATES } from "./states.js";
import { crumbs, lifetime, onLeave } from "./views.js";
import { waterfall } from "./waterfall.js";

export function turnView(sid, tid) {
  crumbs(
    { text: "Sessions", href: "#/sessions" },
    { text: sid, href: sessionHref(sid) },
    { text: tid },
  );
  const gone = lifetime();
  const base = `/v1/sessions/${enc(sid)}/turns/${enc(tid)}`;
  const stateSlot = h("span", { testid: "turn-state-slot" });
  const summary = h("dl", { cls: "facts", testid: "turn-summary" });
  const live = h("p", { cls: "live", testid: "live-status" }, "Loading…");
  const cancel = h("button", { type: "button", cls: "danger", testid: "cancel-turn", hidden: true }, "Cancel turn");
  const refresh = h("button", { type: "button", cls: "quiet", testid: "turn-refresh" }, "Refresh");
  const pending = h("section", { cls: "panel pending", testid: "pending-input", hidden: true });
  const outcome = h("section", { cls: "panel", testid: "turn-outcome", hidden: true });
  const steps = table("steps", ["Step", "Kind", "Name", "Attempt", "Fence", "Duration", "Retries", "Outcome", "Usage", "Cost", "Committed", ""]);
  const attempts = table("attempts", ["Attempt", "Fence", "Seq", "Kind", "Started", "Ended"]);
  const waits = table("waits", ["Request", "Kind", "Step", "Tool", "Requested", "Waited", "Outcome", "Answered by"]);
  const events = table("events", ["Seq", "Type", "Step", "At", "Detail"]);
  const deltas = h("pre", { cls: "deltas", testid: "deltas", hidden: true, title: "Model text as it streams" });
  const overTime = h("div", { cls: "over-time", testid: "waterfall-slot" });

  main.append(
    h("section", { testid: "turn-view" },
      h("div", { cls: "heading" },
        h("h1", {}, "Turn ", h("code", {}, tid)), stateSlot,
        h("span", { cls: "spacer" }), refresh, cancel),
      live,
      summary,
      pending,
      outcome,
      h("h2", {}, "Waterfall ", h("span", { cls: "muted" }, "each step, wait and attempt over time")),
      overTime,
      h("h2", {}, "Steps"), steps.el,
      h("div", { cls: "columns" },
        h("div", {}, h("h2", {}, "Attempts"), attempts.el),
        h("div", {}, h("h2", {}, "Waits"), waits.el)),
      h("h2", {}, "Events ", h("span", { cls: "muted" }, "the turn's journal, with content")),
      deltas, events.el),
  );
  emptyRow(events.body, 5, "No events yet.");

  let turn = null;
  let busy = false;
  let again = false;

  async function refreshTimeline() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const t = await api("GET", base + "/timeline");
      if (gone()) return;
      renderTimeline(t);
    } catch (err) {
      if (!gone()) showError(err);
    } finally {
      busy = false;
      if (again && !gone()) {
        again = false;
        refreshTimeline();
      }
    }
  }

  let scheduled = null;
  function scheduleRefresh() {
    if (scheduled) return;
    scheduled = setTimeout(() => {
      scheduled = null;
      if (!gone()) refreshTimeline();
    }, 150);
  }
  onLeave(() => clearTimeout(scheduled));

  const input = pendingInput({ el: pending, base, gone, refresh: scheduleRefresh });
  const journal = liveEvents({
    sid, tid, gone, live, events, deltas,
    current: () => turn,
    refresh: scheduleRefresh,
    poll: refreshTimeline,
  });

  function renderTimeline(t) {
    turn = t.turn;
    journal.from(turn.accepted_seq);
    stateSlot.replaceChildren(stateBadge(turn.state, "turn-state"));
    summary.replaceChildren(
      ...facts([
        ["Session", h("a", { href: sessionHref(sid) }, sid)],
        // the version its definition is on (it changes when the turn moves: docs/deploy.md)
        ["Agent", turn.agent_version ? `${turn.agent} v${turn.agent_version}` : turn.agent],
        ["Attempt", String(turn.attempt)],
        ["Accepted seq", String(turn.accepted_seq)],
        ["Created", fmtTime(turn.created_at)],
        ["Updated", fmtTime(turn.updated_at)],
        ["Elapsed", fmtMs(t.elapsed_ms)],
        ["Cancel requested", turn.cancel_requested ? "yes" : "no"],
        // its model call waits for a provider rate limit's slot, holding no worker
        ...(turn.paced ? [["Paced", h("span", { testid: "turn-paced" }, pacedText(turn.paced))]] : []),
        ...(turn.rerun_of ? [["Re-run of", rerunOf(turn.rerun_of)]] : []),
      ]),
    );
    const ended = TERMINAL_STATES.includes(turn.state);
    overTime.replaceChildren(waterfall(t, { width: overTime.clientWidth || 1000 }));
    cancel.hidden = ended || turn.cancel_requested;
    renderOutcome(turn);
    input.render(turn);

    steps.body.replaceChildren();
    for (const s of t.steps) {
      steps.body.append(
        row(
          [
            s.step === null ? "—" : String(s.step),
            s.kind,
            s.name ?? "—",
            String(s.attempt),
            String(s.fence),
            fmtMs(s.duration_ms),
            String(s.retries),
            h("span", { cls: "outcome outcome-" + (["ok", "error", "interrupted"].includes(s.outcome) ? s.outcome : "other") },
              s.origin && s.origin !== "live" ? `${s.outcome} (${s.origin})` : s.outcome),
            fmtUsage(s.usage),
            fmtCost(s.cost),
            fmtTime(s.committed_at),
            s.step === null ? "" : rerunButton(s.step),
          ],
          { testid: "step-row", "data-kind": ["model", "tool", "compaction"].includes(s.kind) ? s.kind : "other", "data-origin": s.origin || "live" },
        ),
      );
    }
    if (!t.steps.length) emptyRow(steps.body, 12, "No steps yet.");

    attempts.body.replaceChildren();
    for (const a of t.attempts) {
      const ended = a.ended_at ? fmtTime(a.ended_at) : "running";
      attempts.body.append(row([String(a.attempt), String(a.fence), String(a.seq), a.kind ?? "—", fmtTime(a.started_at), ended], { testid: "attempt-row", "data-kind": a.kind ?? "" }));
    }
    if (!t.attempts.length) emptyRow(attempts.body, 6, "Not started yet.");

    waits.body.replaceChildren();
    for (const w of t.waits) {
      waits.body.append(
        row(
          [
            w.request_id, w.kind, w.step === null ? "—" : String(w.step), w.tool ?? "—",
            fmtTime(w.requested_at), w.resolved_at ? fmtMs(w.waited_ms) : "open",
            w.outcome ?? "—", w.answered_by ?? "—",
          ],
          { testid: "wait-row" },
        ),
      );
    }
    if (!t.waits.length) emptyRow(waits.body, 8, "No waits.");

    if (ended) journal.settle();
  }

  function rerunOf(r) {
    const edited = r.edited ? `, ${r.edited.replace("_", " ")} edited` : "";
    return h("span", { testid: "rerun-of" },
      h("a", { href: turnHref(r.session_id, r.turn_id) }, r.turn_id), ` from step ${r.from_step}${edited}`);
  }

  // a new turn in this session: the steps before ``step`` reused, never run again
  function rerunButton(step) {
    const button = h("button", { type: "button", cls: "quiet", testid: "rerun-step", title: `Re-run this turn from step ${step}` }, "Re-run from here");
    button.addEventListener("click", async () => {
      clearError();
      button.disabled = true;
      try {
        const made = await api("POST", base + "/rerun", { from_step: step });
        if (!gone()) location.hash = turnHref(made.session_id, made.turn_id);
      } catch (err) {
        if (!gone()) showError(err);
        button.disabled = false;
      }
    });
    return button;
  }

  function renderOutcome(t) {
    if (t.result) {
      const text = typeof t.result.text === "string" ? t.result.text : null;
      const more = text === null || Object.keys(t.result).length > 1;
      outcome.replaceChildren(
        ...[
          h("h2", {}, "Result"),
          text !== null ? h("p", { cls: "result-text", testid: "turn-result-text" }, text) : null,
          more ? h("pre", { testid: "turn-result" }, json(t.result)) : null,
        ].filter(Boolean),
      );
      outcome.hidden = false;
    } else if (t.error) {
      outcome.replaceChildren(h("h2", {}, "Error"), h("pre", { cls: "bad", testid: "turn-error" }, json(t.error)));
      outcome.hidden = false;
    } else {
      outcome.hidden = true;
    }
  }

  cancel.addEventListener("click", async () => {
    clearError();
    cancel.disabled = true;
    try {
      await api("POST", base + "/cancel");
      scheduleRefresh();
    } catch (err) {
      if (!gone()) showError(err);
    } finally {
      cancel.disabled = false;
    }
  });
  refresh.addEventListener("click", () => refreshTimeline());

  (async () => {
    await refreshTimeline();
    if (gone() || !turn || TERMINAL_STATES.includes(turn.state)) return; // settle() read the journal
    journal.follow();
  })();
}

function pacedText(paced) {
  return `until ${fmtTime(paced.until)}, by rate limit ${paced.limit} (${paced.reason})`;
}
