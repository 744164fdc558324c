// How the stream recovers from what a live API rarely does on demand: a 503, a 429, a
// stream gone silent, a `stream.resume` frame, a stream token refused once it expired,
// and a server that never comes back. A local HTTP server speaks the API's SSE wire
// format (api/sse.py), one scripted answer per connection.

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { type Event, TurnkeepClient, ApiError, Unreachable } from "../src/index.js";

type Script = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A server answering its n-th request with `scripts[n]` (the last one after that). */
async function scripted(scripts: Script[]): Promise<{ url: string; seen: http.IncomingMessage[]; close: () => Promise<void> }> {
  const seen: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req);
    const script = scripts[Math.min(seen.length, scripts.length) - 1];
    script?.(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const event = (seq: number, type = "turn.started") =>
  `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify({ seq, session_id: "s", turn_id: "t", type, data: {}, created_at: "2025-01-01T00:00:00Z" })}\n\n`;

function sse(res: http.ServerResponse, ...frames: string[]): void {
  res.writeHead(200, { "Content-Type": "text/event-stream" });
  for (const frame of frames) res.write(frame);
}

function problem(res: http.ServerResponse, status: number, code: string): void {
  res.writeHead(status, { "Content-Type": "application/problem+json", "Retry-After": "1" });
  res.end(JSON.stringify({ type: `urn:turnkeep:problem:${code}`, title: code, status, code, detail: code }));
}

test("503, 429, silence and stream.resume each reconnect from the last seq; the events come once", async () => {
  const server = await scripted([
    (_, res) => problem(res, 503, "unavailable"),
    (_, res) => sse(res, ": heartbeat earliest_seq=1\n\n", event(1)), // then silence
    (_, res) => problem(res, 429, "quota_exceeded"),
    (_, res) => {
      sse(res, event(1), event(2), `event: stream.resume\ndata: {"reason":"lagging","after":2}\n\n`);
      res.end();
    },
    (_, res) => {
      sse(res, event(3, "turn.completed"));
      res.end();
    },
  ]);
  try {
    const c = new TurnkeepClient({ url: server.url, token: "t", backoff: 10, streamTimeout: 300 });
    const drops: string[] = [];
    const seen: Event[] = [];
    for await (const e of c.sessions.events("s", {
      onDrop: (why) => drops.push(why instanceof Error ? why.message : String(why)),
      until: (e) => e.type === "turn.completed",
    })) {
      seen.push(e);
    }
    assert.deepEqual(
      seen.map((e) => e.seq),
      [1, 2, 3],
    );
    assert.deepEqual(
      server.seen.map((r) => r.headers["last-event-id"] ?? null),
      [null, null, "1", "1", "2"],
    );
    assert.ok(server.seen.every((r) => r.headers.authorization === "Bearer t"));
    assert.equal(drops.length, 4);
    assert.match(drops[0] ?? "", /HTTP 503/);
    assert.match(drops[1] ?? "", /silent/);
    assert.match(drops[2] ?? "", /HTTP 429/);
    assert.match(drops[3] ?? "", /stream.resume/);
  } finally {
    await server.close();
  }
});

test("a stream token refused once it was used is renewed; a fresh one refused is an error", async () => {
  let issued = 0;
  const valid = new Set<string>();
  const source = async () => {
    issued += 1;
    const token = `tkst1.token-${issued}`;
    valid.clear(); // the older one expired
    valid.add(token);
    return { token, expires_at: new Date(Date.now() + 600_000).toISOString() };
  };
  const authorized = (req: http.IncomingMessage) => valid.has(new URL(req.url ?? "", "http://x").searchParams.get("stream_token") ?? "");
  const server = await scripted([
    (req, res) => {
      assert.ok(authorized(req));
      sse(res, event(1));
      res.end();
      valid.clear(); // expires while the reader is away
    },
    (req, res) => (authorized(req) ? sse(res) : problem(res, 401, "unauthorized")),
    (req, res) => {
      assert.ok(authorized(req));
      sse(res, event(2, "turn.completed"));
      res.end();
    },
  ]);
  try {
    const c = new TurnkeepClient({ url: server.url, backoff: 10 });
    const seen: number[] = [];
    for await (const e of c.sessions.events("s", { after: 0, streamToken: source, until: (e) => e.type === "turn.completed" })) {
      seen.push(e.seq);
    }
    assert.deepEqual(seen, [1, 2]);
    assert.equal(issued, 2);
    const queries = server.seen.map((r) => new URL(r.url ?? "", "http://x").searchParams);
    assert.deepEqual(
      queries.map((q) => [q.get("after"), q.get("stream_token")]),
      [
        ["0", "tkst1.token-1"],
        ["1", "tkst1.token-1"],
        ["1", "tkst1.token-2"],
      ],
    );
    assert.ok(server.seen.every((r) => r.headers.authorization === undefined && r.headers["last-event-id"] === undefined));
  } finally {
    await server.close();
  }
  // a token that was just issued and is refused will not be mended by another try
  const refusing = await scripted([(_, res) => problem(res, 401, "unauthorized")]);
  try {
    const c = new TurnkeepClient({ url: refusing.url, backoff: 10 });
    await assert.rejects(
      (async () => {
        for await (const _ of c.sessions.events("s", { streamToken: source })) break;
      })(),
      (err: unknown) => err instanceof ApiError && err.status === 401,
    );
    assert.equal(refusing.seen.length, 1);
  } finally {
    await refusing.close();
  }
});

test("a server that never answers well ends the stream with Unreachable after the retries", async () => {
  const server = await scripted([(_, res) => problem(res, 503, "unavailable")]);
  try {
    const c = new TurnkeepClient({ url: server.url, token: "t", backoff: 5, retries: 3 });
    await assert.rejects(
      (async () => {
        for await (const _ of c.sessions.events("s")) break;
      })(),
      (err: unknown) => err instanceof Unreachable && /4 times in a row/.test(err.message),
    );
    assert.equal(server.seen.length, 4);
  } finally {
    await server.close();
  }
  // and a stream the caller stops ends at once, its connection closed
  const open = await scripted([(_, res) => sse(res, ": heartbeat earliest_seq=1\n\n")]);
  try {
    const stop = new AbortController();
    const c = new TurnkeepClient({ url: open.url, token: "t" });
    const done = (async () => {
      for await (const _ of c.sessions.events("s", { signal: stop.signal })) break;
    })();
    setTimeout(() => stop.abort(), 100);
    await done;
    assert.equal(open.seen.length, 1);
  } finally {
    await open.close();
  }
});
