// The typed client over `fetch` (Node 18+ and every browser): the connection, and one
// attribute per resource a front end needs (`client.turns`, `client.sessions`,
// `client.search`), each a class of its own module over the `Connection` this is.
// Bodies and answers are the generated OpenAPI types (./types.ts); a problem answer
// throws an `ApiError` (./errors.ts). A browser app normally holds no bearer token: it
// gets stream tokens from its own back end and follows with those (`streamToken` of
// `FollowOptions`).

import type { Connection, Request } from "./connection.js";
import { Unreachable, responseError } from "./errors.js";
import { withQuery } from "./http.js";
import { SearchApi } from "./search.js";
import { SessionsApi } from "./sessions.js";
import { TurnsApi } from "./turns.js";

export interface ClientOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** A bearer token of `TURNKEEP_TOKENS` (never ship one to a browser). */
  token?: string | undefined;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** Reconnections in a row an event stream may fail before `Unreachable` (default 10). */
  retries?: number | undefined;
  /** The first pause after a stream drops, in ms; it doubles up to 5 s (default 500). */
  backoff?: number | undefined;
  /** Silence on a stream longer than this (ms) drops it; heartbeats come every 15 s
   *  by default (default 45,000). */
  streamTimeout?: number | undefined;
  /** The longest single long poll `turns.wait` asks for, in seconds (default 10, as the
   *  Python client's; at most the API's `TURNKEEP_MAX_WAIT`, 60 by default). */
  poll?: number | undefined;
}

export class TurnkeepClient implements Connection {
  readonly url: string;
  readonly retries: number;
  readonly backoff: number;
  readonly streamTimeout: number;
  readonly poll: number;
  /** A session's turns: admit, get, wait, cancel, answer, list. */
  readonly turns: TurnsApi;
  /** The tenant's sessions: get, list, messages, their events. */
  readonly sessions: SessionsApi;
  /** The tenant's turns across sessions, filtered. */
  readonly search: SearchApi;
  private readonly token: string | undefined;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.token = options.token;
    this.fetcher = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retries = options.retries ?? 10;
    this.backoff = options.backoff ?? 500;
    this.streamTimeout = options.streamTimeout ?? 45_000;
    this.poll = options.poll ?? 10;
    this.turns = new TurnsApi(this);
    this.sessions = new SessionsApi(this);
    this.search = new SearchApi(this);
  }

  /** The headers of a request with the bearer token (none without one). */
  authorization(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  /** `fetch` on the API, a failure to get an answer as `Unreachable`. */
  async send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetcher(`${this.url}${path}`, init);
    } catch (err) {
      if (init.signal?.aborted) throw err;
      const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      throw new Unreachable(`${init.method ?? "GET"} ${path}: ${why}`);
    }
  }

  /** A JSON request: its answer's body and the response; a problem throws `ApiError`. */
  async call<T>(request: Request): Promise<{ body: T; response: Response }> {
    const headers: Record<string, string> = { Accept: "application/json", ...this.authorization() };
    if (request.body !== undefined) headers["Content-Type"] = "application/json";
    const response = await this.send(withQuery(request.path, request.query), {
      method: request.method,
      headers: { ...headers, ...request.headers },
      body: request.body === undefined ? null : JSON.stringify(request.body),
      signal: request.signal ?? null,
    });
    if (response.status >= 400) throw await responseError(response);
    const body = (response.status === 204 ? null : await response.json()) as T;
    return { body, response };
  }
}
