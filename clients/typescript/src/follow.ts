// Following a session's event stream over fetch: every committed event after the cursor,
// in seq order, each once, however often the connection drops.
//
// - The cursor is the last seq yielded. With the bearer token it goes in the
//   `Last-Event-ID` header; with a stream token, in `?after=` beside `?stream_token=`
//   (no header then but Accept, so a browser's cross-origin request needs no preflight).
// - A drop (a network error, the stream ending, a 5xx or 429, a `stream.resume` frame,
//   `streamTimeout` of silence) reconnects after a pause that doubles from `backoff`
//   up to 5 s; a heartbeat or an event resets it; `retries` failures in a row give up
//   with `Unreachable`.
// - A cursor the retention cut passed (410 before the stream opens, or the
//   `stream.resync_required` frame) is `ResyncRequired`: thrown, unless `onResync`
//   says where to go on from (e.g. `resyncFromEarliest`, after rebuilding what the
//   caller shows from the turns).
// - A stream token expires (at most 10 minutes): a new one is asked for (from the API
//   with `streamToken: true`, or from the caller's function) before it does, and when
//   one is refused (401) after it was used a while.

import { type Connection, read } from "./connection.js";
import { enc, withQuery } from "./http.js";
import { ResyncRequired, ApiError, Unreachable, responseError } from "./errors.js";
import { Cursor, Reconnect, lines } from "./sse.js";
import type { Delta, Event, StreamToken } from "./types.js";
import { isEvent } from "./types.js";

/** Where a stream token comes from: `true`, the API (with the client's bearer token);
 *  a string, that token (it cannot be renewed); a function, the caller's (e.g. its own
 *  back end, which holds the bearer token). */
export type StreamTokenSource = true | string | ((sessionId: string) => Promise<string | StreamToken>);

export interface FollowOptions {
  /** Events with `seq > after` (default: from the earliest retained event). */
  after?: number | undefined;
  /** Yield the live model text (`Delta`) too. */
  deltas?: boolean | undefined;
  /** Stops the stream (the generator returns). */
  signal?: AbortSignal | undefined;
  /** Follow with a stream token (`?stream_token=`) instead of the bearer token. */
  streamToken?: StreamTokenSource | undefined;
  /** The cursor to go on from when the retention cut passed it; without, `ResyncRequired`
   *  is thrown. */
  onResync?: ((error: ResyncRequired) => number | Promise<number>) | undefined;
  /** End after an event this accepts (e.g. the turn's terminal event). */
  until?: ((event: Event) => boolean) | undefined;
  /** Told of every drop and the pause before the next connection (ms). */
  onDrop?: ((why: unknown, delay: number) => void) | undefined;
}

/** A short-lived token to follow the session's events without the bearer token
 *  (`POST /v1/sessions/{sid}/stream-tokens`; `client.sessions.streamToken`). */
export function issueStreamToken(connection: Connection, sessionId: string): Promise<StreamToken> {
  return read<StreamToken>(connection, { method: "POST", path: `/v1/sessions/${enc(sessionId)}/stream-tokens` });
}

/** `onResync` that goes on from the earliest retained event. */
export function resyncFromEarliest(error: ResyncRequired): number {
  return Math.max(0, error.earliest - 1);
}

/** Renewal of the stream token ahead of its expiry, in ms. */
const RENEW_BEFORE = 15_000;

class StreamTokens {
  private token: string | null = null;
  private expires = 0;
  /** the token in hand was fetched for the connection being opened */
  fresh = false;

  constructor(
    private readonly client: Connection,
    private readonly sessionId: string,
    private readonly source: StreamTokenSource,
  ) {
    if (typeof source === "string") {
      this.token = source;
      this.expires = Number.POSITIVE_INFINITY;
    }
  }

  get renewable(): boolean {
    return typeof this.source !== "string";
  }

  async current(): Promise<string> {
    this.fresh = false;
    if (this.token !== null && Date.now() < this.expires - RENEW_BEFORE) return this.token;
    if (typeof this.source === "string") return this.source;
    const got = this.source === true ? await issueStreamToken(this.client, this.sessionId) : await this.source(this.sessionId);
    const expires = typeof got === "string" ? Number.NaN : Date.parse(got.expires_at);
    this.token = typeof got === "string" ? got : got.token;
    // a bare string's expiry is unknown: kept until it is refused
    this.expires = Number.isFinite(expires) ? expires : Number.POSITIVE_INFINITY;
    this.fresh = true;
    return this.token;
  }

  drop(): void {
    this.token = null;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The request of one connection: its path and headers. */
async function opening(
  client: Connection,
  sessionId: string,
  cursor: number | null,
  tokens: StreamTokens | null,
): Promise<{ path: string; headers: Record<string, string> }> {
  const path = `/v1/sessions/${enc(sessionId)}/events`;
  if (tokens !== null) {
    const query = { after: cursor, stream_token: await tokens.current() };
    return { path: withQuery(path, query), headers: { Accept: "text/event-stream" } };
  }
  const headers: Record<string, string> = { Accept: "text/event-stream", ...client.authorization() };
  if (cursor !== null) headers["Last-Event-ID"] = String(cursor);
  return { path, headers };
}

/** Whether a failure of one connection is one the next connection recovers from. */
function retryable(err: unknown): boolean {
  if (err instanceof Reconnect || err instanceof Unreachable) return true;
  // another problem the API answered, or an event that is not one: no retry mends it
  if (err instanceof ApiError) return false;
  return true; // the connection failed or was cut (fetch's TypeError, an AbortError)
}

/** The session's committed events (and deltas, with `deltas`), each once, resumed across
 *  drops; see the top of this file. */
export async function* follow(
  client: Connection,
  sessionId: string,
  options: FollowOptions = {},
): AsyncGenerator<Event | Delta> {
  const { signal, deltas = false } = options;
  const cursor = new Cursor(options.after ?? 0, client.retries, client.backoff);
  let explicit = options.after !== undefined;
  const tokens = options.streamToken === undefined ? null : new StreamTokens(client, sessionId, options.streamToken);
  while (!signal?.aborted) {
    let why: unknown = new Reconnect("the stream ended");
    const connection = new AbortController();
    const stop = () => connection.abort();
    signal?.addEventListener("abort", stop, { once: true });
    let silence: ReturnType<typeof setTimeout> | undefined;
    const watch = () => {
      clearTimeout(silence);
      silence = setTimeout(() => connection.abort(new Reconnect("the stream went silent")), client.streamTimeout);
    };
    try {
      const { path, headers } = await opening(client, sessionId, explicit || cursor.last > 0 ? cursor.last : null, tokens);
      watch();
      const response = await client.send(path, { method: "GET", headers, signal: connection.signal });
      if (response.status === 401 && tokens?.renewable && !tokens.fresh) {
        // the token in hand expired or was revoked: ask for another
        await response.body?.cancel();
        tokens.drop();
        throw new Reconnect("the stream token was refused");
      }
      if (response.status >= 500 || response.status === 429) {
        await response.body?.cancel();
        throw new Reconnect(`HTTP ${response.status}`);
      }
      if (response.status >= 400) throw await responseError(response);
      if (response.body === null) throw new Reconnect("no body");
      cursor.opened();
      for await (const line of lines(response.body)) {
        watch();
        const item = cursor.line(line, deltas);
        if (item === null) continue;
        yield item;
        if (options.until && isEvent(item) && options.until(item)) return;
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof ResyncRequired && options.onResync) {
        cursor.last = await options.onResync(err);
        explicit = true;
        continue; // from the new cursor, at once
      }
      if (!retryable(err)) throw err;
      why = connection.signal.aborted && connection.signal.reason instanceof Reconnect ? connection.signal.reason : err;
    } finally {
      clearTimeout(silence);
      signal?.removeEventListener("abort", stop);
      connection.abort(); // a consumer that stopped early closes the connection
    }
    const delay = cursor.dropped(why);
    options.onDrop?.(why, delay);
    await sleep(delay, signal);
  }
}
