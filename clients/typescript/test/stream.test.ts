// The resumable event stream against the live API: contiguous seqs to the turn's end, a
// connection cut under it resumed from Last-Event-ID, stream tokens instead of the
// bearer token, and a cursor the retention cut passed (410) handled by a resync.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  type Event,
  ResyncRequired,
  TurnkeepClient,
  ApiError,
  isEvent,
  isTerminalEvent,
  resyncFromEarliest,
} from "../src/index.js";
import { API_URL, ask, client, contiguous, fresh, waiting } from "./live.js";
import { CuttingProxy } from "./proxy.js";

let proxy: CuttingProxy;
before(async () => {
  proxy = await CuttingProxy.start(API_URL);
});
after(async () => {
  await proxy.close();
});

const endOf = (tid: string) => (e: Event) => e.turn_id === tid && isTerminalEvent(e);

test("the stream yields contiguous seqs from the cursor, ending in turn.completed", async () => {
  const c = client();
  const sid = fresh("stream");
  const { turn } = await c.turns.admit(sid, ask("demo"));
  const seen: Event[] = [];
  let deltas = 0;
  for await (const item of c.sessions.stream(sid, { after: 0, deltas: true, until: endOf(turn.turn_id) })) {
    if (isEvent(item)) seen.push(item);
    else deltas += 1; // live model text: speculative, no seq
  }
  contiguous(seen, 1);
  assert.equal(seen[0]?.type, "turn.accepted");
  assert.equal(seen.at(-1)?.type, "turn.completed");
  assert.ok(seen.some((e) => e.type === "model.completed"));
  assert.ok(deltas >= 0);
  // from a cursor in the middle: exactly the events after it
  const rest: Event[] = [];
  for await (const e of c.sessions.events(sid, { after: 2, until: endOf(turn.turn_id) })) rest.push(e);
  assert.deepEqual(
    rest.map((e) => e.seq),
    seen.slice(2).map((e) => e.seq),
  );
});

test("a connection cut mid-stream is resumed from Last-Event-ID: every event once, none lost", async () => {
  const c = client();
  const viaProxy = client({ url: proxy.url });
  const sid = fresh("cut");
  const { turn } = await c.turns.admit(sid, ask("payer", "pay"));
  const seen: Event[] = [];
  const drops: unknown[] = [];
  let cutAt: number | null = null;
  const before = proxy.requests.length;
  for await (const e of viaProxy.sessions.events(sid, {
    after: 0,
    until: endOf(turn.turn_id),
    onDrop: (why) => drops.push(why),
  })) {
    seen.push(e);
    if (e.type === "input.requested" && cutAt === null) {
      // the turn waits: cut the connection under the reader, then let the turn go on
      cutAt = e.seq;
      assert.ok(proxy.cut() >= 2);
      const parked = await waiting(c, sid, turn.turn_id);
      await c.turns.approve(sid, turn.turn_id, parked.pending_input?.request_id ?? "");
    }
  }
  assert.ok(cutAt !== null);
  contiguous(seen, 1);
  assert.equal(seen.at(-1)?.type, "turn.completed");
  assert.ok(drops.length >= 1, "the cut was seen as a drop");
  const streams = proxy.requests.slice(before).filter((r) => r.startsWith(`get /v1/sessions/${sid}/events`));
  assert.ok(streams.length >= 2, `one reconnection at least: ${streams.length}`);
  assert.match(streams[0] ?? "", /\r\nlast-event-id: 0(\r\n|$)/);
  assert.match(streams[1] ?? "", new RegExp(`\\r\\nlast-event-id: ${cutAt}(\\r\\n|$)`));
});

test("a stream token follows the session without the bearer token", async () => {
  const c = client();
  const sid = fresh("token");
  const { turn } = await c.turns.admit(sid, ask("demo"));
  const issued = await c.sessions.streamToken(sid);
  assert.match(issued.token, /^tkst1\./);
  assert.ok(Date.parse(issued.expires_at) > Date.now());
  // a client that holds no bearer token at all, through the recording proxy
  const browser = new TurnkeepClient({ url: proxy.url, backoff: 50 });
  const before = proxy.requests.length;
  const seen: Event[] = [];
  for await (const e of browser.sessions.events(sid, { after: 0, streamToken: issued.token, until: endOf(turn.turn_id) })) {
    seen.push(e);
  }
  contiguous(seen, 1);
  assert.equal(seen.at(-1)?.type, "turn.completed");
  const sent = proxy.requests.slice(before);
  assert.ok(sent.length >= 1);
  for (const head of sent) {
    assert.match(head, /[?&]stream_token=tkst1\./);
    assert.doesNotMatch(head, /\r\nauthorization:/);
  }
  // a token from a function (the app's back end), asked for when the stream opens
  let asked = 0;
  const fromBackEnd = async (session: string) => {
    asked += 1;
    return c.sessions.streamToken(session);
  };
  const again: Event[] = [];
  for await (const e of browser.sessions.events(sid, { after: 1, streamToken: fromBackEnd, until: endOf(turn.turn_id) })) {
    again.push(e);
  }
  assert.equal(asked, 1);
  assert.deepEqual(
    again.map((e) => e.seq),
    seen.slice(1).map((e) => e.seq),
  );
  // a tampered token, or another session's, is refused: 401, a typed error, no retry
  const forged = `${issued.token.slice(0, -2)}xx`;
  for (const [session, token] of [
    [sid, forged],
    [fresh("other"), issued.token],
  ] as const) {
    await assert.rejects(
      (async () => {
        for await (const _ of browser.sessions.events(session, { after: 0, streamToken: token })) break;
      })(),
      (err: unknown) => err instanceof ApiError && err.status === 401 && err.code === "unauthorized",
    );
  }
});

const PRUNED = process.env["TK_PRUNED_SID"] ?? "";
const EARLIEST = Number(process.env["TK_PRUNED_EARLIEST"]);
const HEAD = Number(process.env["TK_PRUNED_HEAD"]);

test("a cursor before the retention cut: 410 resync_required, then a resync from the earliest", async () => {
  assert.ok(PRUNED && EARLIEST > 1 && HEAD > EARLIEST, "the pruned session is set up");
  const c = client();
  const isResync = (err: unknown) => {
    assert.ok(err instanceof ResyncRequired, String(err));
    assert.equal(err.status, 410);
    assert.equal(err.code, "resync_required");
    assert.deepEqual([err.requested, err.earliest, err.latest], [0, EARLIEST, HEAD]);
    return true;
  };
  // without a resync handler the stream says so, typed, and reads nothing more
  await assert.rejects(async () => {
    for await (const _ of c.sessions.events(PRUNED, { after: 0 })) break;
  }, isResync);
  await assert.rejects(c.sessions.eventPage(PRUNED, { after: 0 }), isResync);
  // with one, it goes on from the earliest retained event, each event once, to the head
  const resyncs: ResyncRequired[] = [];
  const seen: Event[] = [];
  for await (const e of c.sessions.events(PRUNED, {
    after: 0,
    onResync: (err) => {
      resyncs.push(err);
      return resyncFromEarliest(err);
    },
    until: (e) => e.seq === HEAD,
  })) {
    seen.push(e);
  }
  assert.equal(resyncs.length, 1);
  contiguous(seen, EARLIEST);
  assert.equal(seen.length, HEAD - EARLIEST + 1);
});
