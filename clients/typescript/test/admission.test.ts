// Admission, reads and problems against the live API.

import assert from "node:assert/strict";
import { test } from "node:test";

import { TurnkeepClient, ApiError } from "../src/index.js";
import { API_URL, TOKEN_B, ask, client, contiguous, fresh } from "./live.js";

test("a turn admitted twice with one Idempotency-Key is one turn", async () => {
  const c = client();
  const sid = fresh("admit");
  const key = fresh("turn");
  const labelled = { ...ask("demo"), metadata: { suite: sid } };
  const first = await c.turns.admit(sid, labelled, { idempotencyKey: key });
  const again = await c.turns.admit(sid, labelled, { idempotencyKey: key });
  assert.equal(first.created, true); // 202
  assert.equal(again.created, false); // 200: the stored turn
  assert.equal(first.turn.turn_id, key);
  assert.equal(again.turn.turn_id, key);
  assert.equal(again.turn.accepted_seq, first.turn.accepted_seq);
  assert.equal(first.location, `/v1/sessions/${sid}/turns/${key}`);
  const listed = await c.turns.list(sid);
  assert.deepEqual(
    listed.turns.map((t) => t.turn_id),
    [key],
  );

  // the same key with another input is refused, and admits nothing
  await assert.rejects(c.turns.admit(sid, ask("demo", "Weather in Rome?"), { idempotencyKey: key }), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 409);
    assert.equal(err.code, "idempotency_conflict");
    assert.equal(err.problem.type, "urn:turnkeep:problem:idempotency_conflict");
    return true;
  });

  const done = await c.turns.wait(sid, key, 60);
  assert.equal(done.state, "completed");
  assert.equal(typeof done.result?.["text"], "string");
  // the reads say the same turn
  const session = await c.sessions.get(sid);
  assert.equal(session.session_id, sid);
  const page = await c.sessions.eventPage(sid, { after: 0 });
  contiguous(page.events, 1);
  assert.equal(page.events[0]?.type, "turn.accepted");
  assert.equal(page.events.at(-1)?.type, "turn.completed");
  assert.equal(page.head_seq, page.events.at(-1)?.seq);
  const transcript = await c.sessions.messages(sid);
  assert.equal(transcript.messages[0]?.role, "user");
  assert.equal(transcript.messages.at(-1)?.role, "assistant");
  assert.equal(transcript.messages[0]?.["content"], "Weather in Paris?");
  const timeline = await c.turns.timeline(sid, key);
  assert.equal(timeline.turn.turn_id, key);
  assert.equal(timeline.attempts.length, 1);
  const sessions = await c.sessions.list({ limit: 500 });
  assert.ok(sessions.sessions.some((s) => s.session_id === sid));
  // found by its label and state across the tenant's sessions (repeated query keys)
  const found = await c.search.turns({ metadata: [`suite=${sid}`], state: ["completed", "failed"] });
  assert.deepEqual(
    found.turns.map((t) => [t.turn_id, t.metadata]),
    [[key, { suite: sid }]],
  );
  const none = await c.search.turns({ metadata: [`suite=${sid}`], state: ["cancelled"] });
  assert.deepEqual(none.turns, []);
});

test("a problem answer becomes a typed error with its code and status", async () => {
  const c = client();
  const sid = fresh("problems");
  const tid = fresh("turn");
  await c.turns.admit(sid, ask("demo"), { idempotencyKey: tid });

  const expect = async (call: Promise<unknown>, status: number, code: string): Promise<ApiError> => {
    let caught: unknown = null;
    await call.catch((err: unknown) => {
      caught = err;
    });
    assert.ok(caught instanceof ApiError, `expected a ApiError ${code}, got ${String(caught)}`);
    assert.equal(caught.status, status);
    assert.equal(caught.code, code);
    assert.equal(caught.problem.status, status);
    return caught;
  };
  // another tenant's turn answers exactly as a missing one
  const other = new TurnkeepClient({ url: API_URL, token: TOKEN_B });
  const hidden = await expect(other.turns.get(sid, tid), 404, "not_found");
  const missing = await expect(c.turns.get(sid, fresh("nothing")), 404, "not_found");
  assert.deepEqual(hidden.problem, missing.problem);
  await expect(new TurnkeepClient({ url: API_URL, token: "wrong" }).sessions.get(sid), 401, "unauthorized");
  await expect(new TurnkeepClient({ url: API_URL }).sessions.get(sid), 401, "unauthorized");
  await expect(c.turns.admit(sid, ask("no-such-agent")), 422, "unknown_agent");
  await expect(c.turns.admit(sid, ask("demo"), { idempotencyKey: "not a key" }), 400, "invalid_idempotency_key");
  const invalid = await expect(
    c.turns.admit(sid, { agent: "demo", input: [] } as unknown as Parameters<typeof c.turns.admit>[1]),
    422,
    "validation_error",
  );
  assert.ok(Array.isArray(invalid.problem.errors) && invalid.problem.errors.length > 0);
});
