// The hooks against the live API, in a real React tree (react-dom on jsdom): a turn
// followed to its end, then the page "reloaded" (the tree unmounted, a new one mounted
// on the same sessionStorage): no second admission, no event delivered twice.

import { page } from "./dom.js";

import assert from "node:assert/strict";
import { test } from "node:test";

import { useEffect } from "react";
import { type Root, createRoot } from "react-dom/client";

import { type Event, TurnkeepClient, isTerminalEvent } from "../src/index.js";
import {
  type SessionView,
  type TurnView,
  type UseSessionOptions,
  type UseTurnOptions,
  sessionKey,
  turnKey,
  useSession,
  useTurn,
} from "../src/react.js";
import { ask, client, contiguous, fresh } from "./live.js";

/** The views a mounted hook committed; `until` resolves on the first that passes. */
class Probe<T> {
  latest: T | null = null;
  private waiters: { pass: (view: T) => boolean; resolve: (view: T) => void; reject: (err: Error) => void }[] = [];

  seen(view: T): void {
    this.latest = view;
    const failed = (view as { status?: string; error?: Error | null }).error;
    this.waiters = this.waiters.filter((w) => {
      if (failed) w.reject(failed); // a hook that failed will not get there: say why now
      else if (w.pass(view)) w.resolve(view);
      else return true;
      return false;
    });
  }

  until(pass: (view: T) => boolean, what: string, ms = 60_000): Promise<T> {
    if (this.latest !== null && pass(this.latest)) return Promise.resolve(this.latest);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(this.latest)}`)), ms);
      this.waiters.push({
        pass,
        resolve: (view) => {
          clearTimeout(timer);
          resolve(view);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
    });
  }
}

function TurnProbe({ probe, options }: { probe: Probe<TurnView>; options: UseTurnOptions }) {
  const view = useTurn(options);
  useEffect(() => probe.seen(view));
  return null;
}

function SessionProbe({ probe, options }: { probe: Probe<SessionView>; options: UseSessionOptions }) {
  const view = useSession(options);
  useEffect(() => probe.seen(view));
  return null;
}

function mount(element: React.ReactElement): Root {
  const root = createRoot(page.window.document.createElement("div"));
  root.render(element);
  return root;
}

/** A client whose requests are written down ("POST /v1/sessions/…"). */
function recorded(): { c: TurnkeepClient; calls: string[] } {
  const calls: string[] = [];
  const fetcher: typeof fetch = (input, init) => {
    calls.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
    return fetch(input, init);
  };
  return { c: client({ fetch: fetcher }), calls };
}

test("useTurn follows a turn; reloaded, it resumes without admitting again or delivering twice", async () => {
  const storage = page.window.sessionStorage;
  const { c, calls } = recorded();
  const sid = fresh("hook");
  const tid = fresh("turn");
  const admissions = () => calls.filter((call) => call === `POST /v1/sessions/${sid}/turns`).length;
  const delivered: Event[] = [];
  const options: UseTurnOptions = {
    client: c,
    sessionId: sid,
    turnId: tid,
    request: ask("payer", "pay"),
    storage,
    onEvent: (e) => delivered.push(e),
  };

  // first page: admitted, followed until it waits for an approval
  const first = new Probe<TurnView>();
  let root = mount(<TurnProbe probe={first} options={options} />);
  const parked = await first.until(
    (v) => v.turn?.state === "waiting" && v.events.some((e) => e.type === "input.requested"),
    "the turn waiting",
  );
  assert.equal(parked.created, true);
  assert.equal(admissions(), 1);
  const rid = parked.turn?.pending_input?.request_id;
  assert.ok(rid);
  const seenBefore = delivered.length;
  const lastSeq = parked.lastSeq;
  assert.equal(lastSeq, delivered.at(-1)?.seq);
  root.unmount(); // the reload

  assert.deepEqual(JSON.parse(storage.getItem(turnKey(sid, tid)) ?? "null"), {
    admitted: true,
    lastSeq,
    done: false,
  });

  // second page: same storage, same turn id and request
  const second = new Probe<TurnView>();
  root = mount(<TurnProbe probe={second} options={options} />);
  const resumed = await second.until((v) => v.status === "following" && v.turn?.state === "waiting", "the reload following");
  assert.equal(admissions(), 1, "a reload admits nothing");
  assert.equal(resumed.created, null);
  assert.equal(resumed.lastSeq, lastSeq);
  await resumed.answer(rid, { approved: true });
  const done = await second.until((v) => v.status === "done", "the turn done");
  assert.equal(done.turn?.state, "completed");
  assert.match(String(done.turn?.result?.["text"]), /^ok: /);
  // each of the turn's events delivered once across the two pages, none lost
  const journal = (await c.sessions.eventPage(sid, { after: 0 })).events.filter((e) => e.turn_id === tid);
  assert.deepEqual(
    delivered.map((e) => e.seq),
    journal.map((e) => e.seq),
  );
  contiguous(delivered, journal[0]?.seq ?? 1);
  assert.ok(isTerminalEvent(delivered.at(-1) ?? { type: "turn.started" }));
  assert.deepEqual(
    done.events.map((e) => e.seq),
    delivered.slice(seenBefore).map((e) => e.seq),
  );
  assert.ok(done.events.every((e) => e.seq > (lastSeq ?? 0)));
  root.unmount();

  // a third page, after the end: reads the turn, follows nothing, delivers nothing
  const streamsBefore = calls.filter((call) => call.endsWith("/events")).length;
  const third = new Probe<TurnView>();
  root = mount(<TurnProbe probe={third} options={options} />);
  const ended = await third.until((v) => v.status === "done" && v.turn !== null, "the ended turn read");
  assert.equal(ended.turn?.state, "completed");
  assert.deepEqual(ended.events, []);
  assert.equal(calls.filter((call) => call.endsWith("/events")).length, streamsBefore);
  assert.equal(admissions(), 1);
  root.unmount();

  // a page that lost its record sends the admission again: the key makes it a replay
  storage.removeItem(turnKey(sid, tid));
  const fourth = new Probe<TurnView>();
  root = mount(<TurnProbe probe={fourth} options={{ ...options, onEvent: undefined }} />);
  const replayed = await fourth.until((v) => v.status === "done", "the replayed turn done");
  assert.equal(replayed.created, false);
  assert.equal(admissions(), 2);
  assert.deepEqual(
    (await c.turns.list(sid)).turns.map((t) => t.turn_id),
    [tid],
  );
  root.unmount();
});

test("useSession follows a session; a submission cut by a reload is sent again as a replay", async () => {
  const storage = page.window.sessionStorage;
  const { c, calls } = recorded();
  const sid = fresh("hook-session");
  const delivered: Event[] = [];
  const options: UseSessionOptions = { client: c, sessionId: sid, storage, onEvent: (e) => delivered.push(e) };
  const admissions = () => calls.filter((call) => call === `POST /v1/sessions/${sid}/turns`).length;
  const ended = (tid: string) => (v: SessionView) => v.events.some((e) => e.turn_id === tid && isTerminalEvent(e));

  const first = new Probe<SessionView>();
  let root = mount(<SessionProbe probe={first} options={options} />);
  // a session no turn has made yet: nothing to follow until the first submission
  const empty = await first.until((v) => v.status === "empty", "the empty session");
  const one = await empty.submit(ask("demo"), { turnId: fresh("one") });
  assert.equal(one.created, true);
  const after = await first.until(ended(one.turn.turn_id), "the first turn's end");
  root.unmount();

  // the reload came while a submission was under way: its request is kept
  const lastSeq = after.lastSeq;
  const two = fresh("two");
  storage.setItem(sessionKey(sid), JSON.stringify({ lastSeq, pending: { turnId: two, request: ask("demo", "Weather in Oslo?") } }));
  const second = new Probe<SessionView>();
  root = mount(<SessionProbe probe={second} options={options} />);
  const resumed = await second.until(ended(two), "the second turn's end");
  assert.equal(admissions(), 2);
  assert.ok(resumed.events.every((e) => e.seq > (lastSeq ?? 0)));
  assert.equal(JSON.parse(storage.getItem(sessionKey(sid)) ?? "{}").pending, null);
  root.unmount();

  // the turn had been admitted before the reload? Sent again, it is a replay: one turn
  storage.setItem(sessionKey(sid), JSON.stringify({ lastSeq: resumed.lastSeq, pending: { turnId: two, request: ask("demo", "Weather in Oslo?") } }));
  const third = new Probe<SessionView>();
  root = mount(<SessionProbe probe={third} options={options} />);
  await third.until((v) => v.status === "following", "following again");
  assert.equal(admissions(), 3);
  const turns = (await c.turns.list(sid)).turns.map((t) => t.turn_id);
  assert.deepEqual(turns.sort(), [one.turn.turn_id, two].sort());
  root.unmount();

  // across the three pages, the session's events were delivered once each, in order
  const journal = (await c.sessions.eventPage(sid, { after: 0 })).events;
  assert.deepEqual(
    delivered.map((e) => e.seq),
    journal.map((e) => e.seq),
  );
});
