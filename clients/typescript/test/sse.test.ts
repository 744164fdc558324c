// The framing and the cursor, without a server: what the stream tests over the network
// cannot aim at (a \r\n split across two chunks, a final frame, the backoff's bound).

import assert from "node:assert/strict";
import { test } from "node:test";

import { Cursor, ResyncRequired, SSEParser, ApiError, Unreachable, lines } from "../src/index.js";

function body(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const line of lines(stream)) out.push(line);
  return out;
}

const EVENT = (seq: number, type = "turn.started") =>
  JSON.stringify({ seq, session_id: "s", turn_id: "t", type, data: {}, created_at: "2025-01-01T00:00:00Z" });

test("lines: LF, CRLF and CR end a line, wherever the chunks split them", async () => {
  assert.deepEqual(await all(body(["a\nb\r", "\nc\rd", "\r\n\n", "é\n"])), ["a", "b", "c", "d", "", "é"]);
  // a multi-byte character split across chunks
  const bytes = new TextEncoder().encode("é\n");
  const split = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, 1));
      controller.enqueue(bytes.slice(1));
      controller.close();
    },
  });
  assert.deepEqual(await all(split), ["é"]);
});

test("the parser joins data lines, keeps id and event, and reports comments", () => {
  const parser = new SSEParser();
  assert.equal(parser.feed("id: 7"), null);
  assert.equal(parser.feed("event: turn.started"), null);
  assert.equal(parser.feed("data: {\"a\":"), null);
  assert.equal(parser.feed("data:1}"), null);
  assert.deepEqual(parser.feed(""), { event: "turn.started", id: "7", data: ["{\"a\":", "1}"], comment: false });
  assert.equal(parser.feed(""), null); // a blank line alone dispatches nothing
  assert.equal(parser.feed(": heartbeat earliest_seq=1")?.comment, true);
});

test("the cursor yields each seq once, skips deltas unless asked, and ends on the final frames", () => {
  const cursor = new Cursor(3, 2, 100);
  const feed = (frame: string[], deltas = false) => {
    let out = null;
    for (const line of [...frame, ""]) out = cursor.line(line, deltas) ?? out;
    return out;
  };
  assert.equal(feed(["id: 3", "event: turn.started", `data: ${EVENT(3)}`]), null); // seen
  assert.equal((feed(["id: 4", "event: turn.started", `data: ${EVENT(4)}`]) as { seq: number }).seq, 4);
  assert.equal(cursor.last, 4);
  const delta = ["event: model.delta", 'data: {"turn_id":"t","step":1,"text":"Hi"}'];
  assert.equal(feed(delta), null);
  assert.deepEqual(feed(delta, true), { turn_id: "t", step: 1, text: "Hi" });
  assert.throws(() => feed(["event: stream.resume", 'data: {"reason":"lagging","after":4}']), /stream.resume/);
  assert.throws(
    () => feed(["event: stream.resync_required", 'data: {"requested":4,"earliest":9,"latest":20}']),
    (err: unknown) => err instanceof ResyncRequired && err.earliest === 9 && err.latest === 20 && err.requested === 4,
  );
  assert.throws(() => feed(["id: 5", "event: turn.started", "data: not json"]), (err: unknown) => err instanceof ApiError && err.code === "invalid_event");
});

test("a drop pauses twice as long each time, up to the bound, and gives up past the retries", () => {
  const cursor = new Cursor(0, 3, 1000, 3000);
  assert.deepEqual([cursor.dropped("x"), cursor.dropped("x"), cursor.dropped("x")], [1000, 2000, 3000]);
  assert.throws(() => cursor.dropped("down"), (err: unknown) => err instanceof Unreachable && /4 times in a row: down/.test(err.message));
  // a heartbeat says the connection lives: the count starts again
  cursor.line(": heartbeat");
  assert.equal(cursor.failures, 0);
});
