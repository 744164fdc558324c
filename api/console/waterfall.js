// Timelines drawn over time, as SVG (docs/console.md): a turn's waterfall (its time in
// the queue, each model call, tool call, compaction and wait as a bar, its attempts as
// bands, a takeover marked where a new run took the lease, and the work the dead run
// lost before it), and a session's turns side by side.
//
// SVG attributes only (no inline style: the page's policy allows none); data is text.
// The geometry is in the DOM for tests and tools: the plot's left edge and width and
// its time span on the <svg> (data-x0, data-width, data-t0, data-span-ms), each bar's
// times since t0 (data-start-ms, data-end-ms) beside its x and width.

import { h } from "./dom.js";
import { fmtMs } from "./format.js";
import { SESSION_STATES, TERMINAL_STATES } from "./states.js";

const NS = "http://www.w3.org/2000/svg";
const LABEL = 230; // the labels' column
const PAD = 16;
const AXIS = 26;
const ROW = 24;
const BAR = 14;

/** The fills, by what a bar is (the legend says the same). */
export const FILLS = Object.freeze({
  queued: "#9aa3b2",
  model: "#2457c5",
  tool: "#1b7f4b",
  compaction: "#7a4cc2",
  wait: "#d08a1c",
  lost: "#b42318",
  band: "#eef2f9",
  // a session's turn: its state's fill is console.css's (.wf-state-<state>)
  turn: "#6a7485",
});

function svg(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  if (text !== undefined) el.textContent = String(text);
  return el;
}

const ms = (iso) => new Date(iso).getTime();

/** A tick step of 1, 2 or 5 × 10^n ms giving at most ``most`` ticks over ``span``. */
function tickStep(span, most) {
  const raw = span / most;
  const pow = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

/**
 * A chart of ``rows`` ({label, kind, start, end, title, note, testid, data}) on one
 * time axis from ``t0`` to ``t1`` (ms since the epoch), ``width`` px wide; ``bands``
 * ({start, end, label}) shade spans behind the rows, ``markers`` ({at, label}) are
 * vertical lines across them.
 */
export function chart({ rows, t0, t1, width, bands = [], markers = [], testid }) {
  const span = Math.max(t1 - t0, 1);
  const w = Math.max(width, LABEL + 200);
  const plot = w - LABEL - PAD;
  const height = AXIS + rows.length * ROW + 8;
  const x = (t) => LABEL + ((Math.min(Math.max(t, t0), t1) - t0) / span) * plot;
  const root = svg("svg", {
    width: w,
    height,
    viewBox: `0 0 ${w} ${height}`,
    role: "img",
    "data-testid": testid,
    "data-x0": LABEL,
    "data-width": plot,
    "data-t0": new Date(t0).toISOString(),
    "data-span-ms": span,
    "shape-rendering": "crispEdges",
  });
  root.append(svg("title", {}, "Time from the start, left to right"));
  bands.forEach((b, i) => {
    const bx = x(b.start);
    const band = svg("rect", {
      x: bx, y: AXIS - 4, width: Math.max(x(b.end) - bx, 1), height: height - AXIS,
      fill: i % 2 ? "#f6f8fc" : FILLS.band, "data-testid": "wf-band",
    });
    band.append(svg("title", {}, b.label));
    root.append(band);
    // a label only where its band has room for it (the band's title says it anyway)
    if (x(b.end) - bx > 7 * b.label.length) {
      root.append(svg("text", { x: bx + 3, y: AXIS - 8, class: "wf-band-label" }, b.label));
    }
  });
  const step = tickStep(span, Math.max(2, Math.floor(plot / 90)));
  for (let t = 0; t <= span; t += step) {
    const tx = LABEL + (t / span) * plot;
    root.append(
      svg("line", { x1: tx, x2: tx, y1: AXIS - 2, y2: height - 4, class: "wf-grid" }),
      svg("text", { x: tx + 2, y: 11, class: "wf-tick" }, fmtMs(Math.round(t))),
    );
  }
  rows.forEach((r, i) => {
    const y = AXIS + i * ROW;
    const start = Math.max(r.start, t0);
    const end = Math.max(Math.min(r.end, t1), start);
    // whole pixels (crisp edges, and a test can sample a bar's middle); a bar too short
    // to see is drawn 3 px wide
    const bx = Math.round(x(start));
    const bw = Math.max(Math.round(x(end)) - bx, 3);
    const g = svg("g", { "data-testid": r.testid || "wf-row", "data-kind": r.kind, ...(r.data || {}) });
    const bar = svg("rect", {
      x: bx, y: y + (ROW - BAR) / 2, width: bw, height: BAR,
      fill: FILLS[r.kind] || FILLS.turn, class: r.cls,
      "data-testid": "wf-bar", "data-kind": r.kind,
      "data-start-ms": Math.round(start - t0), "data-end-ms": Math.round(end - t0),
    });
    bar.append(svg("title", {}, r.title || r.label));
    const label = svg("text", { x: 6, y: y + ROW / 2 + 4, class: "wf-label" }, clipLabel(r.label));
    const note = svg("text", { x: Math.min(bx + bw + 4, w - 4), y: y + ROW / 2 + 4, class: "wf-note" }, r.note || "");
    if (bx + bw + 90 > w) {
      note.setAttribute("x", bx - 4);
      note.setAttribute("text-anchor", "end");
    }
    g.append(label, bar, note);
    if (r.href) {
      const a = svg("a", { href: r.href });
      a.append(g);
      root.append(a);
    } else {
      root.append(g);
    }
  });
  for (const m of markers) {
    const mx = Math.round(x(m.at));
    const line = svg("line", {
      x1: mx, x2: mx, y1: AXIS - 4, y2: height - 2, class: "wf-marker", "data-testid": "wf-marker",
      "data-at-ms": Math.round(m.at - t0),
    });
    line.append(svg("title", {}, m.label));
    root.append(line, svg("text", { x: mx + 3, y: height - 6, class: "wf-marker-label" }, m.label));
  }
  return root;
}

function clipLabel(text) {
  const s = String(text ?? "");
  return s.length > 34 ? s.slice(0, 33) + "…" : s;
}

function legend(kinds) {
  return h("p", { cls: "wf-legend", testid: "wf-legend" },
    kinds.map(([kind, text]) => h("span", { cls: "wf-key wf-key-" + kind, "data-kind": kind }, text)));
}

/** The rows of a turn's waterfall from its timeline (GET …/timeline), in time order. */
export function waterfallRows(t, now) {
  const turn = t.turn;
  const rows = [];
  const first = t.attempts.length ? ms(t.attempts[0].started_at) : now;
  rows.push({ kind: "queued", label: "queued", start: ms(turn.created_at), end: first, note: fmtMs(first - ms(turn.created_at)), title: "admitted, waiting for a worker" });
  t.attempts.forEach((a, i) => {
    if (a.kind !== "takeover" || i === 0) return;
    const before = t.attempts[i - 1];
    const from = before.ended_at ? ms(before.ended_at) : ms(before.started_at);
    rows.push({
      kind: "lost", label: `lost · attempt ${before.attempt}`, start: from, end: ms(a.started_at),
      note: `retried in attempt ${a.attempt}`,
      title: `attempt ${before.attempt} (fence ${before.fence}) stopped without committing; attempt ${a.attempt} (fence ${a.fence}) took over and ran the rest again`,
      data: { "data-attempt": before.attempt },
    });
  });
  for (const s of t.steps) {
    const end = ms(s.committed_at);
    const start = s.started_at ? ms(s.started_at) : end - (s.duration_ms || 0);
    const retries = s.retries ? ` · ${s.retries} ${s.retries === 1 ? "retry" : "retries"}` : "";
    const what = s.name ? `${s.kind} ${s.name}` : s.kind;
    rows.push({
      kind: s.kind, label: `${s.step ?? "—"} · ${what}`, start, end,
      note: fmtMs(end - start) + retries + (s.outcome !== "ok" ? ` · ${s.outcome}` : ""),
      title: `step ${s.step ?? "—"}: ${what}, attempt ${s.attempt}, fence ${s.fence}, ${s.outcome}${retries}`,
      data: { "data-step": s.step ?? "", "data-attempt": s.attempt, "data-retries": s.retries, "data-outcome": s.outcome },
    });
  }
  for (const w of t.waits) {
    const end = w.resolved_at ? ms(w.resolved_at) : now;
    rows.push({
      kind: "wait", label: `wait · ${w.kind}${w.tool ? " " + w.tool : ""}`, start: ms(w.requested_at), end,
      note: w.resolved_at ? `${fmtMs(end - ms(w.requested_at))} · ${w.outcome ?? ""}${w.answered_by ? " by " + w.answered_by : ""}` : "open",
      title: `request ${w.request_id}: ${w.kind}, ${w.outcome ?? "open"}`,
      data: { "data-request-id": w.request_id },
    });
  }
  return rows.sort((a, b) => a.start - b.start || a.end - b.end);
}

/** A turn's waterfall: the figure, its legend, and the SVG drawn ``width`` px wide. */
export function waterfall(t, { width, now = Date.now() } = {}) {
  const turn = t.turn;
  const t0 = ms(turn.created_at);
  const rows = waterfallRows(t, now);
  const t1 = Math.max(t0 + (t.elapsed_ms || 0), ...rows.map((r) => r.end));
  const bands = t.attempts.map((a) => ({
    start: ms(a.started_at),
    end: a.ended_at ? ms(a.ended_at) : t1,
    label: `attempt ${a.attempt} · fence ${a.fence}${a.kind === "resume" ? " (resumed)" : ""}`,
  }));
  const markers = t.attempts
    .filter((a) => a.kind === "takeover")
    .map((a) => ({ at: ms(a.started_at), label: `takeover · attempt ${a.attempt}, fence ${a.fence}` }));
  return h("figure", { cls: "waterfall", testid: "waterfall-figure" },
    chart({ rows, t0, t1, width, bands, markers, testid: "waterfall" }),
    legend([["queued", "queued"], ["model", "model call"], ["tool", "tool call"], ["wait", "wait"],
      ["compaction", "compaction"], ["lost", "lost to a takeover"]]));
}

/** A session's turns over time (a page of them, GET …/turns), oldest at the top. */
export function sessionTimeline(turns, { width, now = Date.now(), href }) {
  const ordered = [...turns].sort((a, b) => ms(a.created_at) - ms(b.created_at));
  if (!ordered.length) return h("p", { cls: "muted" }, "No turns.");
  const rows = ordered.map((t) => {
    const end = TERMINAL_STATES.includes(t.state) ? ms(t.updated_at) : now;
    const state = SESSION_STATES.includes(t.state) ? t.state : "other";
    return {
      kind: "turn", cls: "wf-state-" + state, label: t.turn_id, start: ms(t.created_at), end,
      note: `${t.state} · ${fmtMs(end - ms(t.created_at))}`, title: `${t.turn_id}: ${t.state}`,
      testid: "turn-bar-row", href: href(t), data: { "data-turn-id": t.turn_id, "data-state": t.state },
    };
  });
  const t0 = rows[0].start;
  const t1 = Math.max(...rows.map((r) => r.end));
  return chart({ rows, t0, t1, width, testid: "session-timeline" });
}
