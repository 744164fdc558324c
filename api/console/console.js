// The turnkeep console (api/console.py, docs/console.md).
//
// Every datum comes from the JSON API under the token the person gives; it is
// untrusted and rendered with textContent only, never as HTML. No inline script,
// no third-party code: the page's Content-Security-Policy allows neither.
"use strict";

(() => {
  const ROOT = document.body.dataset.root || "";
  const EVENT_TYPES = (document.body.dataset.eventTypes || "").split(" ").filter(Boolean);
  const TOKEN_KEY = "turnkeep.console.token";
  const TERMINAL = new Set(["completed", "failed", "cancelled"]);
  const STATES = new Set([
    "idle", "queued", "running", "waiting", "needs_reconciliation",
    "completed", "failed", "cancelled",
  ]);
  const TERMINAL_EVENTS = new Set(["turn.completed", "turn.failed", "turn.cancelled"]);
  const ID = /^[A-Za-z0-9._-]{1,128}$/;
  const POLL_MS = 2000;
  const PAGE = 25;
  const MAX_DELTA_CHARS = 20000;
  const MAX_EVENT_ROWS = 500;
  const JOURNAL_PAGE = 200;
  const JOURNAL_PAGES = 5;

  const $ = (id) => document.getElementById(id);
  const main = $("main");

  // -- small helpers -------------------------------------------------------------

  /** An element: props set as attributes (text: textContent), children as text nodes. */
  function h(tag, props, ...children) {
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

  const enc = encodeURIComponent;
  const sessionHref = (sid) => "#/sessions/" + enc(sid);
  const turnHref = (sid, tid) => sessionHref(sid) + "/turns/" + enc(tid);

  function stateBadge(state, testid) {
    const known = STATES.has(state) ? state : "other";
    return h("span", { cls: "state state-" + known, testid, "data-state": known }, state);
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtTime(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return (
      `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
    );
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "—";
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    const s = Math.round(ms / 1000);
    return `${Math.floor(s / 60)}m ${s % 60}s`;
  }

  function fmtUsage(usage) {
    if (!usage || typeof usage !== "object") return "—";
    const parts = Object.entries(usage).map(([k, v]) => `${k.replace(/_tokens$/, "")} ${v}`);
    return parts.length ? parts.join(", ") : "—";
  }

  function fmtCost(cost) {
    return typeof cost === "number" ? "$" + cost.toFixed(6).replace(/0+$/, "").replace(/\.$/, "") : "—";
  }

  function json(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  function clip(text, max) {
    const s = String(text ?? "");
    return s.length > max ? s.slice(0, max) + "…" : s;
  }

  function table(testid, headings) {
    const body = h("tbody");
    const el = h(
      "table",
      { testid },
      h("thead", {}, h("tr", {}, headings.map((t) => h("th", { scope: "col" }, t)))),
      body,
    );
    return { el, body };
  }

  function row(cells, props) {
    return h("tr", props || {}, cells.map((c) => (c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))));
  }

  function emptyRow(body, columns, text) {
    body.append(h("tr", { cls: "empty" }, h("td", { colspan: columns }, text)));
  }

  // -- errors ----------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const problem = body && typeof body === "object" ? body : {};
      super(problem.detail || `HTTP ${status}`);
      this.status = status;
      this.code = typeof problem.code === "string" ? problem.code : `http_${status}`;
      this.detail = typeof problem.detail === "string" ? problem.detail : "";
      this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    }
  }

  function showError(err) {
    const box = $("error");
    const text = $("error-text");
    if (err instanceof ApiError) {
      const where = err.errors
        .map((e) => `${Array.isArray(e.loc) ? e.loc.join(".") : ""}: ${e.msg ?? ""}`)
        .join("; ");
      text.textContent = `${err.code}: ${err.detail}` + (where ? ` (${where})` : "");
    } else {
      text.textContent = `error: ${err && err.message ? err.message : String(err)}`;
    }
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error-text").textContent = "";
  }

  $("error-close").addEventListener("click", clearError);

  // -- the API ---------------------------------------------------------------------

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  async function api(method, path, body) {
    const headers = { Accept: "application/json", Authorization: "Bearer " + (token() || "") };
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(ROOT + path, init);
    } catch (e) {
      throw new ApiError(0, { code: "network_error", detail: "the API did not answer" });
    }
    const text = await response.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    }
    if (!response.ok) {
      const err = new ApiError(response.status, data);
      if (response.status === 401) signOut(err);
      throw err;
    }
    return data;
  }

  // -- views and their lifetimes ---------------------------------------------------

  /** What the current view runs (timers, streams): stopped when it is left. */
  let stops = [];
  let generation = 0;

  function onLeave(fn) {
    stops.push(fn);
  }

  function leaveView() {
    generation += 1;
    for (const stop of stops.splice(0)) {
      try {
        stop();
      } catch {
        /* already stopped */
      }
    }
  }

  function crumbs(...items) {
    const nav = $("crumbs");
    nav.replaceChildren();
    items.forEach((item, i) => {
      if (i) nav.append(h("span", { cls: "sep" }, "/"));
      nav.append(item.href ? h("a", { href: item.href }, item.text) : h("span", {}, item.text));
    });
  }

  function showLogin(message) {
    leaveView();
    main.replaceChildren();
    crumbs();
    $("sign-out").hidden = true;
    $("login").hidden = false;
    if (message) showError(message);
    $("token-input").focus();
  }

  function signOut(reason) {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(reason);
  }

  $("sign-out").addEventListener("click", () => {
    clearError();
    // what was open belongs to the token just forgotten: the next one starts afresh
    history.replaceState(null, "", "#/sessions");
    signOut(null);
  });

  $("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const value = $("token-input").value.trim();
    if (!value) return;
    clearError();
    sessionStorage.setItem(TOKEN_KEY, value);
    $("token-input").value = "";
    try {
      await api("GET", "/v1/sessions?limit=1");
    } catch (err) {
      if (err.status !== 401) {
        sessionStorage.removeItem(TOKEN_KEY);
        showLogin(err);
      }
      return;
    }
    route();
  });

  function route() {
    leaveView();
    if (!token()) {
      showLogin(null);
      return;
    }
    $("login").hidden = true;
    $("sign-out").hidden = false;
    let parts;
    try {
      parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
    } catch {
      parts = [];
    }
    main.replaceChildren();
    if (parts[0] === "sessions" && parts.length === 2 && ID.test(parts[1])) {
      sessionView(parts[1]);
    } else if (
      parts[0] === "sessions" && parts.length === 4 && parts[2] === "turns" &&
      ID.test(parts[1]) && ID.test(parts[3])
    ) {
      turnView(parts[1], parts[3]);
    } else {
      sessionsView();
    }
  }

  window.addEventListener("hashchange", () => {
    clearError();
    route();
  });

  // -- the tenant's sessions -------------------------------------------------------

  function sessionsView() {
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
    const mine = generation;
    let next = null;

    async function load(before) {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (before) q.set("before", before);
      const page = await api("GET", "/v1/sessions?" + q);
      if (mine !== generation) return;
      if (!before) body.replaceChildren();
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
      if (!before && page.sessions.length === 0) emptyRow(body, 7, "No sessions yet.");
      next = page.next;
      more.hidden = !next;
      el.dataset.loaded = "true";
    }

    more.addEventListener("click", () => load(next).catch(showError));
    refresh.addEventListener("click", () => load(null).catch(showError));
    load(null).catch(showError);
  }

  // -- one session and its turns ---------------------------------------------------

  function sessionView(sid) {
    crumbs({ text: "Sessions", href: "#/sessions" }, { text: sid });
    const summary = h("dl", { cls: "facts", testid: "session-summary" });
    const { el, body } = table("turns", ["Turn", "State", "Agent", "Attempt", "Waiting for", "Created", "Updated"]);
    const more = h("button", { type: "button", testid: "turns-more", hidden: true }, "Older turns");
    const refresh = h("button", { type: "button", cls: "quiet", testid: "session-refresh" }, "Refresh");
    main.append(
      h("section", { testid: "session-view" },
        h("div", { cls: "heading" }, h("h1", {}, "Session ", h("code", {}, sid)), h("span", { cls: "spacer" }), refresh),
        summary,
        h("h2", {}, "Turns ", h("span", { cls: "muted" }, "newest first")),
        el,
        h("div", { cls: "pager" }, more)),
    );
    const mine = generation;
    let next = null;

    async function loadSummary() {
      const s = await api("GET", `/v1/sessions/${enc(sid)}`);
      if (mine !== generation) return;
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

    async function loadTurns(before) {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (before) q.set("before", before);
      const page = await api("GET", `/v1/sessions/${enc(sid)}/turns?` + q);
      if (mine !== generation) return;
      if (!before) body.replaceChildren();
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
      if (!before && page.turns.length === 0) emptyRow(body, 7, "No turns.");
      next = page.next;
      more.hidden = !next;
      el.dataset.loaded = "true";
    }

    const all = () => Promise.all([loadSummary(), loadTurns(null)]).catch(showError);
    more.addEventListener("click", () => loadTurns(next).catch(showError));
    refresh.addEventListener("click", all);
    all();
  }

  function facts(pairs) {
    return pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]);
  }

  // -- one turn: timeline, pending input, live events -------------------------------

  function turnView(sid, tid) {
    crumbs(
      { text: "Sessions", href: "#/sessions" },
      { text: sid, href: sessionHref(sid) },
      { text: tid },
    );
    const mine = generation;
    const base = `/v1/sessions/${enc(sid)}/turns/${enc(tid)}`;
    const stateSlot = h("span", { testid: "turn-state-slot" });
    const summary = h("dl", { cls: "facts", testid: "turn-summary" });
    const live = h("p", { cls: "live", testid: "live-status" }, "Loading…");
    const cancel = h("button", { type: "button", cls: "danger", testid: "cancel-turn", hidden: true }, "Cancel turn");
    const refresh = h("button", { type: "button", cls: "quiet", testid: "turn-refresh" }, "Refresh");
    const pending = h("section", { cls: "panel pending", testid: "pending-input", hidden: true });
    const outcome = h("section", { cls: "panel", testid: "turn-outcome", hidden: true });
    const steps = table("steps", ["Step", "Kind", "Name", "Attempt", "Fence", "Duration", "Retries", "Outcome", "Usage", "Cost", "Committed"]);
    const attempts = table("attempts", ["Attempt", "Fence", "Seq", "Started"]);
    const waits = table("waits", ["Request", "Kind", "Step", "Tool", "Requested", "Waited", "Outcome", "Answered by"]);
    const events = table("events", ["Seq", "Type", "Step", "At", "Detail"]);
    const deltas = h("pre", { cls: "deltas", testid: "deltas", hidden: true, title: "Model text as it streams" });

    main.append(
      h("section", { testid: "turn-view" },
        h("div", { cls: "heading" },
          h("h1", {}, "Turn ", h("code", {}, tid)), stateSlot,
          h("span", { cls: "spacer" }), refresh, cancel),
        live,
        summary,
        pending,
        outcome,
        h("h2", {}, "Steps"), steps.el,
        h("div", { cls: "columns" },
          h("div", {}, h("h2", {}, "Attempts"), attempts.el),
          h("div", {}, h("h2", {}, "Waits"), waits.el)),
        h("h2", {}, "Events ", h("span", { cls: "muted" }, "the turn's journal, with content")),
        deltas, events.el),
    );
    emptyRow(events.body, 5, "No events yet.");

    let turn = null;
    let lastSeq = null; // the session's seq the journal was read up to
    let openRequest = null; // the request id the pending form was built for
    let busy = false;
    let again = false;
    let timer = null;
    let stream = null;

    const gone = () => mine !== generation;

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

    function renderTimeline(t) {
      turn = t.turn;
      if (lastSeq === null) lastSeq = Math.max(0, turn.accepted_seq - 1);
      stateSlot.replaceChildren(stateBadge(turn.state, "turn-state"));
      summary.replaceChildren(
        ...facts([
          ["Session", h("a", { href: sessionHref(sid) }, sid)],
          ["Agent", turn.agent],
          ["Attempt", String(turn.attempt)],
          ["Accepted seq", String(turn.accepted_seq)],
          ["Created", fmtTime(turn.created_at)],
          ["Updated", fmtTime(turn.updated_at)],
          ["Elapsed", fmtMs(t.elapsed_ms)],
          ["Cancel requested", turn.cancel_requested ? "yes" : "no"],
        ]),
      );
      const ended = TERMINAL.has(turn.state);
      cancel.hidden = ended || turn.cancel_requested;
      renderOutcome(turn);
      renderPending(turn);

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
              h("span", { cls: "outcome outcome-" + (["ok", "error", "interrupted"].includes(s.outcome) ? s.outcome : "other") }, s.outcome),
              fmtUsage(s.usage),
              fmtCost(s.cost),
              fmtTime(s.committed_at),
            ],
            { testid: "step-row", "data-kind": ["model", "tool", "compaction"].includes(s.kind) ? s.kind : "other" },
          ),
        );
      }
      if (!t.steps.length) emptyRow(steps.body, 11, "No steps yet.");

      attempts.body.replaceChildren();
      for (const a of t.attempts) {
        attempts.body.append(row([String(a.attempt), String(a.fence), String(a.seq), fmtTime(a.started_at)], { testid: "attempt-row" }));
      }
      if (!t.attempts.length) emptyRow(attempts.body, 4, "Not started yet.");

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

      if (ended) settle();
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

    function renderPending(t) {
      const p = t.pending_input;
      if (!p || p.resolved || TERMINAL.has(t.state)) {
        pending.hidden = true;
        pending.replaceChildren();
        openRequest = null;
        return;
      }
      if (openRequest === p.request_id) return; // keep what the person typed
      openRequest = p.request_id;
      pending.replaceChildren(...pendingPanel(p));
      pending.hidden = false;
    }

    function pendingPanel(p) {
      const tool = p.tool && typeof p.tool === "object" ? p.tool : null;
      const who = p.answered_by && typeof p.answered_by === "object"
        ? Object.entries(p.answered_by).map(([k, v]) => `${k} ${v}`).join(", ")
        : "—";
      const details = facts([
        ["Request", h("code", { testid: "pending-request-id" }, p.request_id)],
        ["Kind", h("span", { testid: "pending-kind" }, p.kind)],
        ["Step", p.step === null || p.step === undefined ? "—" : String(p.step)],
        ["Tool", tool ? `${tool.name ?? "?"}${tool.version ? " v" + tool.version : ""}` : "—"],
        ["Expires", fmtTime(p.expires_at)],
        ["May answer", who],
      ]);
      const out = [h("h2", {}, "Waiting for input: ", p.kind), h("dl", { cls: "facts" }, details)];
      if (p.arguments) out.push(h("h3", {}, "Arguments"), h("pre", { testid: "pending-arguments" }, json(p.arguments)));
      if (p.detail && Object.keys(p.detail).length) out.push(h("h3", {}, "Detail"), h("pre", {}, json(p.detail)));
      out.push(inputForm(p));
      return out;
    }

    async function answer(p, body, buttons) {
      clearError();
      buttons.forEach((b) => (b.disabled = true));
      try {
        await api("POST", `${base}/inputs/${enc(p.request_id)}`, body);
        if (gone()) return;
        pending.replaceChildren(h("p", { testid: "answer-sent" }, "Answer sent: the turn goes on."));
        openRequest = p.request_id;
        scheduleRefresh();
      } catch (err) {
        if (!gone()) showError(err);
        buttons.forEach((b) => (b.disabled = false));
      }
    }

    function inputForm(p) {
      const schema = p.response_schema && typeof p.response_schema === "object" ? p.response_schema : {};
      if (p.kind === "reconciliation" || Array.isArray(schema.oneOf)) return reconcileForm(p, schema);
      const form = h("form", { cls: "answer", testid: "input-form", autocomplete: "off" });
      const props = schema.type === "object" && schema.properties && typeof schema.properties === "object"
        ? schema.properties
        : null;
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const fields = [];
      const approval = props && props.approved && props.approved.type === "boolean";
      if (props) {
        for (const [name, sub] of Object.entries(props)) {
          if (approval && name === "approved") continue;
          fields.push(field(name, sub || {}, required.has(name), p.kind));
        }
      } else {
        fields.push(field(null, schema, true, p.kind));
      }
      fields.forEach((f) => form.append(f.el));
      const collect = () => {
        if (!props) return fields[0].read();
        const body = {};
        for (const f of fields) {
          const v = f.read();
          if (v !== undefined) body[f.name] = v;
        }
        return body;
      };
      const send = (extra, buttons) => {
        let body;
        try {
          body = { ...collect(), ...extra };
        } catch (err) {
          showError(err);
          return;
        }
        answer(p, body, buttons);
      };
      if (approval) {
        // explicit buttons only: Enter in the reason field neither approves nor denies
        const yes = h("button", { type: "button", cls: "good", testid: "approve" }, "Approve");
        const no = h("button", { type: "button", cls: "danger", testid: "deny" }, "Deny");
        form.append(h("div", { cls: "buttons" }, yes, no));
        form.addEventListener("submit", (ev) => ev.preventDefault());
        yes.addEventListener("click", () => send({ approved: true }, [yes, no]));
        no.addEventListener("click", () => send({ approved: false }, [yes, no]));
      } else {
        const submit = h("button", { type: "submit", testid: "input-submit" }, "Answer");
        form.append(h("div", { cls: "buttons" }, submit));
        form.addEventListener("submit", (ev) => {
          ev.preventDefault();
          if (!props) {
            try {
              answer(p, collect(), [submit]);
            } catch (err) {
              showError(err);
            }
            return;
          }
          send({}, [submit]);
        });
      }
      return form;
    }

    function reconcileForm(p, schema) {
      const consts = (Array.isArray(schema.oneOf) ? schema.oneOf : [])
        .map((s) => s && s.properties && s.properties.outcome && s.properties.outcome.const)
        .filter((c) => typeof c === "string");
      const outcomes = consts.length ? consts : ["succeeded", "failed", "not_executed"];
      const outcomeSel = h("select", { id: "reconcile-outcome", testid: "reconcile-outcome" },
        outcomes.map((o) => h("option", { value: o }, o)));
      const result = h("textarea", { id: "reconcile-result", testid: "reconcile-result", rows: 4, spellcheck: "false" });
      const error = h("input", { id: "reconcile-error", testid: "reconcile-error", type: "text" });
      const resultRow = h("div", { cls: "field" }, h("label", { for: "reconcile-result" }, "Result (JSON) — what the call returned"), result);
      const errorRow = h("div", { cls: "field" }, h("label", { for: "reconcile-error" }, "Error — why it failed"), error);
      const submit = h("button", { type: "submit", testid: "reconcile-submit" }, "Record outcome");
      const sync = () => {
        resultRow.hidden = outcomeSel.value !== "succeeded";
        errorRow.hidden = outcomeSel.value !== "failed";
      };
      outcomeSel.addEventListener("change", sync);
      sync();
      const form = h("form", { cls: "answer", testid: "reconcile-form", autocomplete: "off" },
        h("p", { cls: "muted" }, "The call's outcome is unknown. Say what happened: succeeded (its result), failed (why), or not executed (it runs now, once)."),
        h("div", { cls: "field" }, h("label", { for: "reconcile-outcome" }, "Outcome"), outcomeSel),
        resultRow, errorRow, h("div", { cls: "buttons" }, submit));
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        const body = { outcome: outcomeSel.value };
        try {
          if (body.outcome === "succeeded") body.result = parseJson(result.value, "result");
          if (body.outcome === "failed") body.error = error.value;
        } catch (err) {
          showError(err);
          return;
        }
        answer(p, body, [submit]);
      });
      return form;
    }

    // -- live events, or polling ---------------------------------------------------

    let failures = 0;
    let settled = false;

    function setLive(text, mode) {
      live.textContent = text;
      live.dataset.mode = mode;
    }

    function settle() {
      if (settled) return;
      settled = true;
      stopStream();
      stopPolling();
      setLive(`Turn ${turn ? turn.state : "ended"}: nothing more will happen.`, "ended");
      // what the stream had not delivered yet (or all of it: the turn ended before)
      readJournal(JOURNAL_PAGES);
    }

    /** Journal pages after ``lastSeq`` (JSON, not a stream), the turn's events shown. */
    let reading = false;
    let reread = 0; // pages asked for while a read was under way: read once it ends
    async function readJournal(pages) {
      if (lastSeq === null) return;
      if (reading) {
        reread = Math.max(reread, pages);
        return;
      }
      reading = true;
      try {
        for (let i = 0; i < pages && !gone(); i++) {
          const q = new URLSearchParams({ after: String(lastSeq), limit: String(JOURNAL_PAGE) });
          const page = await api("GET", `/v1/sessions/${enc(sid)}/events?${q}`);
          if (gone()) return;
          let ended = false;
          for (const e of page.events) {
            addEvent(e);
            ended = ended || (e.turn_id === tid && TERMINAL_EVENTS.has(e.type));
          }
          if (ended || page.events.length < JOURNAL_PAGE) return;
        }
      } catch (err) {
        if (!gone()) {
          if (err.code === "resync_required") {
            emptyNote(`The journal before this turn was pruned (retention): ${err.detail}`);
          } else {
            showError(err);
          }
        }
      } finally {
        reading = false;
        const more = reread;
        reread = 0;
        if (more && !gone()) readJournal(more);
      }
    }

    function stopStream() {
      if (stream) {
        stream.close();
        stream = null;
      }
    }

    function stopPolling() {
      if (timer) {
        clearInterval(timer);
        timer = null;
      }
    }

    onLeave(stopStream);
    onLeave(stopPolling);

    function startPolling(why) {
      stopStream();
      if (timer || gone()) return;
      setLive(`Polling the timeline every 2 s: ${why}.`, "polling");
      timer = setInterval(() => {
        if (gone()) return;
        refreshTimeline();
        readJournal(1);
      }, POLL_MS);
      readJournal(1);
    }

    function eventDetail(e) {
      const d = e.data || {};
      switch (e.type) {
        case "turn.accepted": {
          const given = d.input && Array.isArray(d.input.messages) ? d.input.messages : [];
          return given
            .map((m) => (m && typeof m.content === "string" ? `${m.role ?? "?"}: ${clip(m.content, 200)}` : ""))
            .filter(Boolean)
            .join(" | ");
        }
        case "model.completed": {
          const m = d.message || {};
          const calls = Array.isArray(m.tool_calls) ? m.tool_calls.map((c) => c && c.name).filter(Boolean) : [];
          return clip(m.content || "", 300) + (calls.length ? ` → calls ${calls.join(", ")}` : "");
        }
        case "tool.completed":
        case "tool.interrupted": {
          const m = d.message || {};
          return `${d.tool || m.name || "tool"}: ${clip(m.content ?? d.error ?? "", 300)}`;
        }
        case "input.requested":
          return `${d.kind || "input"} ${d.request_id || ""}`;
        case "input.resolved":
          return `${d.request_id || ""} by ${d.by || "?"}`;
        case "turn.started":
          return `attempt ${d.attempt ?? "?"}`;
        case "turn.completed":
          return clip(json(d.result), 300);
        case "turn.failed":
          return clip(json(d.error), 300);
        default:
          return "";
      }
    }

    const shown = new Set(); // seqs of the rows shown: the stream and a page may overlap
    function emptyNote(text) {
      if (shown.size === 0) {
        events.body.replaceChildren();
        emptyRow(events.body, 5, text);
      }
    }

    /** One committed event: moves the cursor; a row when it is this turn's. */
    function addEvent(e) {
      if (!e || typeof e.seq !== "number") return false;
      lastSeq = Math.max(lastSeq ?? 0, e.seq);
      if (e.turn_id !== tid || shown.has(e.seq)) return false;
      if (shown.size === 0) events.body.replaceChildren();
      shown.add(e.seq);
      events.body.append(
        row([String(e.seq), e.type, e.step === null || e.step === undefined ? "—" : String(e.step), fmtTime(e.created_at), eventDetail(e)],
          { testid: "event-row", "data-type": EVENT_TYPES.includes(e.type) ? e.type : "other" }),
      );
      while (events.body.rows.length > MAX_EVENT_ROWS) events.body.deleteRow(0);
      return true;
    }

    function onCommitted(msg) {
      let e;
      try {
        e = JSON.parse(msg.data);
      } catch {
        return;
      }
      if (!addEvent(e)) return;
      scheduleRefresh();
      if (TERMINAL_EVENTS.has(e.type)) stopStream();
    }

    function onDelta(msg) {
      let d;
      try {
        d = JSON.parse(msg.data);
      } catch {
        return;
      }
      if (d.turn_id !== tid || typeof d.text !== "string") return;
      deltas.hidden = false;
      const text = deltas.textContent + d.text;
      deltas.textContent = text.length > MAX_DELTA_CHARS ? text.slice(-MAX_DELTA_CHARS) : text;
    }

    async function follow() {
      if (gone() || (turn && TERMINAL.has(turn.state))) return;
      let issued;
      try {
        issued = await api("POST", `/v1/sessions/${enc(sid)}/stream-tokens`);
      } catch (err) {
        if (gone()) return;
        if (err.code === "stream_tokens_not_configured") {
          startPolling("live events need stream tokens, which this server has not configured");
        } else {
          showError(err);
          startPolling("the live stream is unavailable");
        }
        return;
      }
      if (gone() || (turn && TERMINAL.has(turn.state))) return;
      const q = new URLSearchParams({ after: String(lastSeq), stream_token: issued.token });
      const es = new EventSource(`${ROOT}/v1/sessions/${enc(sid)}/events?${q}`);
      stream = es;
      es.addEventListener("open", () => {
        failures = 0;
        setLive("Live: following the session's events (SSE).", "live");
        scheduleRefresh(); // anything committed before the stream opened
      });
      for (const type of EVENT_TYPES) es.addEventListener(type, onCommitted);
      es.addEventListener("model.delta", onDelta);
      es.addEventListener("stream.resync_required", (msg) => {
        // the journal before our cursor was pruned: go on from its earliest event
        try {
          const d = JSON.parse(msg.data);
          if (typeof d.earliest === "number") lastSeq = Math.max(lastSeq, d.earliest - 1);
        } catch {
          /* keep the cursor */
        }
        reopen();
      });
      es.addEventListener("error", () => {
        // CONNECTING: the browser reconnects by itself with Last-Event-ID;
        // CLOSED: refused (an expired stream token, a quota): a new token, or poll
        if (es.readyState === EventSource.CLOSED && stream === es) reopen();
      });
    }

    function reopen() {
      stopStream();
      failures += 1;
      if (failures > 3) {
        startPolling("the live stream keeps failing");
        return;
      }
      setTimeout(follow, 1000 * failures);
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
      if (gone() || !turn || TERMINAL.has(turn.state)) return; // settle() read the journal
      follow();
    })();
  }

  // -- answer forms from a response schema ----------------------------------------

  function parseJson(text, what) {
    if (!text.trim()) throw new Error(`${what}: a JSON value is needed`);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${what}: not valid JSON`);
    }
  }

  function typeOf(schema) {
    const t = schema.type;
    if (Array.isArray(t)) return t.find((x) => x !== "null") || "string";
    return t;
  }

  let fieldCount = 0;

  /** A form field for one property of a response schema, with how to read it back. */
  function field(name, schema, required, kind) {
    fieldCount += 1;
    const id = `field-${fieldCount}`;
    const title = name === null ? "Answer (JSON)" : name;
    const label = h("label", { for: id }, title, required ? h("span", { cls: "req" }, " *") : null);
    const hint = typeof schema.description === "string" ? h("small", { cls: "muted" }, schema.description) : null;
    const testid = `field-${name === null ? "body" : name}`;
    const type = typeOf(schema);
    const options = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : null;
    let input;
    let read;
    if (options) {
      input = h("select", { id, testid },
        required ? null : h("option", { value: "" }, "—"),
        options.map((o, i) => h("option", { value: String(i) }, typeof o === "string" ? o : JSON.stringify(o))));
      read = () => (input.value === "" ? undefined : options[Number(input.value)]);
    } else if (type === "boolean") {
      input = h("input", { id, testid, type: "checkbox" });
      read = () => input.checked;
    } else if (type === "integer" || type === "number") {
      input = h("input", {
        id, testid, type: "number", step: type === "integer" ? "1" : "any",
        min: typeof schema.minimum === "number" ? schema.minimum : null,
        max: typeof schema.maximum === "number" ? schema.maximum : null,
      });
      read = () => {
        if (input.value === "") {
          if (required) throw new Error(`${title}: a number is needed`);
          return undefined;
        }
        const n = Number(input.value);
        if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
          throw new Error(`${title}: not ${type === "integer" ? "an integer" : "a number"}`);
        }
        return n;
      };
    } else if (type === "string") {
      const secret = kind === "external_auth" || schema.format === "password" || /token|secret|password/i.test(name || "");
      input = h("input", {
        id, testid, type: secret ? "password" : "text", autocomplete: "off",
        maxlength: typeof schema.maxLength === "number" ? schema.maxLength : null,
      });
      read = () => (input.value === "" && !required ? undefined : input.value);
    } else {
      // objects, arrays, anything else: JSON by hand
      input = h("textarea", { id, testid, rows: 4, spellcheck: "false", placeholder: "JSON" });
      read = () => {
        if (!input.value.trim() && !required) return undefined;
        return parseJson(input.value, title);
      };
    }
    const el = h("div", { cls: type === "boolean" ? "field check" : "field" }, label, input, hint);
    return { el, name, read };
  }

  route();
})();
