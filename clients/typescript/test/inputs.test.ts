// Answers and cancellation against the live API and a real worker.

import assert from "node:assert/strict";
import { test } from "node:test";

import { type Event, ApiError, isTerminalEvent } from "../src/index.js";
import { ask, client, contiguous, fresh, waiting } from "./live.js";

test("an approval answered: the turn runs the call it asked for and completes", async () => {
  const c = client();
  const sid = fresh("approve");
  const { turn } = await c.turns.admit(sid, ask("payer", "pay"));
  const parked = await waiting(c, sid, turn.turn_id);
  const asked = parked.pending_input;
  assert.ok(asked);
  assert.equal(asked.kind, "approval");
  const answered = await c.turns.approve(sid, turn.turn_id, asked.request_id, "fine");
  assert.equal(answered.turn_id, turn.turn_id);
  const done = await c.turns.wait(sid, turn.turn_id, 60);
  assert.equal(done.state, "completed");
  assert.match(String(done.result?.["text"]), /^ok: .*charged/);
  // an answer is recorded once
  await assert.rejects(c.turns.deny(sid, turn.turn_id, asked.request_id), (err: unknown) => {
    return err instanceof ApiError && err.status === 409 && err.code === "input_not_open";
  });
});

test("approvals asked together are answered at once, all of them in one request", async () => {
  const c = client();
  const sid = fresh("many");
  const { turn } = await c.turns.admit(sid, ask("payroll", "pay them"));
  const parked = await waiting(c, sid, turn.turn_id);
  const asked = parked.pending_inputs ?? [];
  assert.deepEqual(
    asked.map((p) => p.arguments),
    [{ amount: 1 }, { amount: 2 }, { amount: 3 }],
  );
  const [one, two, three] = asked.map((p) => p.request_id);
  assert.ok(one && two && three);
  const answered = await c.turns.answerMany(sid, turn.turn_id, {
    [one]: { approved: true },
    [two]: { approved: false, reason: "no" },
    [three]: { approved: true },
  });
  assert.deepEqual(answered.pending_inputs, []);
  const done = await c.turns.wait(sid, turn.turn_id, 60);
  assert.equal(done.state, "completed");
  const results = String(done.result?.["text"]).split("|");
  assert.match(results[0] ?? "", /charged/);
  assert.equal(results[1], "error: not approved: no");
  assert.match(results[2] ?? "", /charged/);
});

test("a cancelled turn: settled at once while it waits, its stream ends with turn.cancelled", async () => {
  const c = client();
  const sid = fresh("cancel");
  const { turn } = await c.turns.admit(sid, ask("payer", "pay"));
  await waiting(c, sid, turn.turn_id);
  const cancelled = await c.turns.cancel(sid, turn.turn_id);
  assert.equal(cancelled.state, "cancelled");
  const seen: Event[] = [];
  for await (const event of c.sessions.events(sid, {
    after: turn.accepted_seq - 1,
    until: (e) => e.turn_id === turn.turn_id && isTerminalEvent(e),
  })) {
    seen.push(event);
  }
  contiguous(seen, turn.accepted_seq);
  assert.equal(seen.at(-1)?.type, "turn.cancelled");
  assert.ok(seen.some((e) => e.type === "input.requested"));
  await assert.rejects(c.turns.cancel(sid, turn.turn_id), (err: unknown) => {
    return err instanceof ApiError && err.status === 409 && err.code === "turn_not_active";
  });
});
