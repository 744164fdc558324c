// What a resource (./turns.ts, ./sessions.ts, ./search.ts) and the event stream
// (./follow.ts) need of a client: the API's fetch and bearer headers, one JSON request,
// the long poll's and the stream's settings. `TurnkeepClient` (./client.ts) is one and
// holds the resources; they depend on this shape, not on the client, so the modules
// import one another in one direction only.

import type { Query } from "./http.js";

/** One JSON request of the API. */
export interface Request {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Query | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

export interface Connection {
  /** Reconnections in a row a stream may fail before `Unreachable`. */
  readonly retries: number;
  /** The first pause after a stream drops, in ms; it doubles up to 5 s. */
  readonly backoff: number;
  /** Silence on a stream longer than this (ms) drops it. */
  readonly streamTimeout: number;
  /** The longest single long poll `turns.wait` asks for, in seconds. */
  readonly poll: number;
  /** The headers of a request with the bearer token (none without one). */
  authorization(): Record<string, string>;
  /** `fetch` on the API, a failure to get an answer as `Unreachable`. */
  send(path: string, init: RequestInit): Promise<Response>;
  /** A JSON request: its answer's body and the response; a problem throws `ApiError`. */
  call<T>(request: Request): Promise<{ body: T; response: Response }>;
}

/** The body of a request's answer. */
export async function read<T>(connection: Connection, request: Request): Promise<T> {
  return (await connection.call<T>(request)).body;
}
