// A turn's journal on its page: live over SSE with a short-lived stream token while
// the turn is active, else (no stream token secret, or a stream that keeps failing)
// polled every 2 s; once the turn has ended, read as JSON pages. The bearer token
// never goes in a URL: EventSource cannot send a header, hence the stream token.

import { ROOT, api } from "./api.js";
import { emptyRow, enc, row } from "./dom.js";
import { showError } from "./errors.js";
import { eventDetail } from "./events.js";
import { fmtTime } from "./format.js";
import { EVENT_TYPES, TERMINAL_EVENTS, TERMINAL_STATES } from "./states.js";
import { onLeave } from "./views.js";

const POLL_MS = 2000;
const MAX_DELTA_CHARS = 20000;
const MAX_EVENT_ROWS = 500;
const JOURNAL_PAGE = 200;
const JOURNAL_PAGES = 5;

/** Session ``sid``'s journal for turn ``tid``: rows in ``events``, the model's text
 *  as it streams in ``deltas``, how it is followed in ``live``. ``current()`` is the
 *  turn as last read, ``refresh()`` rereads it soon, ``poll()`` at once. */
export function liveEvents({ sid, tid, gone, live, events, deltas, current, refresh, poll }) {
  let lastSeq = null; // the session's seq the journal was read up to
  let timer = null;
  let stream = null;
  let failures = 0;
  let settled = false;
  const ended = () => {
    const turn = current();
    return Boolean(turn) && TERMINAL_STATES.includes(turn.state);
  };

  /** The cursor starts before the turn's first event (once: a reread keeps it). */
  function from(acceptedSeq) {
    if (lastSeq === null) lastSeq = Math.max(0, acceptedSeq - 1);
  }

  function setLive(text, mode) {
    live.textContent = text;
    live.dataset.mode = mode;
  }

  function settle() {
    if (settled) return;
    settled = true;
    stopStream();
    stopPolling();
    const turn = current();
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
          ended = ended || (e.turn_id === tid && TERMINAL_EVENTS.includes(e.type));
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
      poll();
      readJournal(1);
    }, POLL_MS);
    readJournal(1);
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
    refresh();
    if (TERMINAL_EVENTS.includes(e.type)) stopStream();
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
    if (gone() || ended()) return;
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
    if (gone() || ended()) return;
    const q = new URLSearchParams({ after: String(lastSeq), stream_token: issued.token });
    const es = new EventSource(`${ROOT}/v1/sessions/${enc(sid)}/events?${q}`);
    stream = es;
    es.addEventListener("open", () => {
      failures = 0;
      setLive("Live: following the session's events (SSE).", "live");
      refresh(); // anything committed before the stream opened
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

  return { from, settle, follow };
}
