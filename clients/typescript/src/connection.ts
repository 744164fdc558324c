// What following a session's event stream needs of a client (./follow.ts): the API's
// fetch and bearer headers, the stream's reconnection settings, and stream tokens.
// `TurnkeepClient` (./client.ts) is one; the stream depends on this shape, not on the
// client, so the two modules import each other in one direction only.

import type { StreamToken } from "./types.js";

export interface Connection {
  /** Reconnections in a row a stream may fail before `Unreachable`. */
  readonly retries: number;
  /** The first pause after a stream drops, in ms; it doubles up to 5 s. */
  readonly backoff: number;
  /** Silence on a stream longer than this (ms) drops it. */
  readonly streamTimeout: number;
  /** The headers of a request with the bearer token (none without one). */
  authorization(): Record<string, string>;
  /** `fetch` on the API, a failure to get an answer as `Unreachable`. */
  send(path: string, init: RequestInit): Promise<Response>;
  /** A short-lived token to follow this session's events without the bearer token. */
  streamToken(sessionId: string): Promise<StreamToken>;
}
