// The typed client: one method per route a front end needs, over `fetch` (Node 18+ and
// every browser). Bodies and answers are the generated OpenAPI types (./types.ts); a
// problem answer throws an `ApiError` (./errors.ts). The event stream is
// ./follow.ts's. A browser app normally holds no bearer token: it gets stream tokens
// from its own back end and follows with those (`streamToken` of `FollowOptions`).

import type { Connection } from "./connection.js";
import { Unreachable, responseError } from "./errors.js";
import { type FollowOptions, follow } from "./follow.js";
import { type Query, enc, withQuery } from "./http.js";
import type {
  AnswersRequest,
  Delta,
  Event,
  EventPage,
  ListQuery,
  TurnSearchQuery,
  TurnsQuery,
  MessagePage,
  MessagesQuery,
  Session,
  SessionPage,
  StreamToken,
  Timeline,
  Turn,
  TurnPage,
  TurnRequest,
} from "./types.js";
import { isTerminalState } from "./types.js";

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
  /** The longest single long poll `wait` asks for, in seconds (default 10, as the Python
   *  client's; at most the API's `TURNKEEP_MAX_WAIT`, 60 by default). */
  poll?: number | undefined;
}

/** An admission's answer: the turn, and whether this request admitted it (202) or
 *  the Idempotency-Key had already (200, a replay). */
export interface Admitted {
  turn: Turn;
  created: boolean;
  location: string | null;
}

/** An id made here for an Idempotency-Key, when the caller names none: 32 random hex
 *  digits (`randomUUID` is missing from a page served over plain http). */
export function newTurnId(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

interface Request {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Query | undefined;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  signal?: AbortSignal | undefined;
}

export class TurnkeepClient implements Connection {
  readonly url: string;
  readonly retries: number;
  readonly backoff: number;
  readonly streamTimeout: number;
  readonly poll: number;
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

  private async call<T>(request: Request): Promise<{ body: T; response: Response }> {
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

  private async read<T>(request: Request): Promise<T> {
    return (await this.call<T>(request)).body;
  }

  // -- turns ---------------------------------------------------------------------------

  /** Admit a turn. `idempotencyKey` is its id: the same key with the same request
   *  answers the stored turn (`created: false`), with another request 409
   *  `idempotency_conflict`. Without one a new id is made for this call. */
  async admit(
    sessionId: string,
    request: TurnRequest,
    options: { idempotencyKey?: string | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<Admitted> {
    const { body, response } = await this.call<Turn>({
      method: "POST",
      path: `/v1/sessions/${enc(sessionId)}/turns`,
      body: request,
      headers: { "Idempotency-Key": options.idempotencyKey ?? newTurnId() },
      signal: options.signal,
    });
    return { turn: body, created: response.status === 202, location: response.headers.get("location") };
  }

  /** The turn as it is; with `wait` (seconds), a long poll that answers once it ended or
   *  waits for someone, or after that long. */
  turn(sessionId: string, turnId: string, options: { wait?: number; signal?: AbortSignal } = {}): Promise<Turn> {
    return this.read<Turn>({
      method: "GET",
      path: `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}`,
      query: { wait: options.wait },
      signal: options.signal,
    });
  }

  /** The turn once terminal or parked on an open input request, or as it is after
   *  `timeout` seconds (long polls of at most `poll` seconds each). */
  async wait(sessionId: string, turnId: string, timeout: number, signal?: AbortSignal): Promise<Turn> {
    const until = Date.now() + timeout * 1000;
    for (;;) {
      const left = (until - Date.now()) / 1000;
      const last = left <= 0;
      const options = last ? { signal } : { wait: Math.max(Math.min(left, this.poll), 0.001), signal };
      const turn = await this.turn(sessionId, turnId, options as { wait?: number; signal?: AbortSignal });
      const asked = turn.pending_input != null && !turn.pending_input.resolved;
      if (last || isTerminalState(turn.state) || asked) return turn;
    }
  }

  /** Request cancellation: at once for a turn no worker steps, else at its next safe
   *  point. 409 `turn_not_active` once it has ended. */
  cancel(sessionId: string, turnId: string): Promise<Turn> {
    return this.read<Turn>({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}/cancel` });
  }

  /** Answer the turn's open input request (`{approved: true}`, a question's answer…). */
  answer(sessionId: string, turnId: string, requestId: string, response: Record<string, unknown>): Promise<Turn> {
    return this.read<Turn>({
      method: "POST",
      path: `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}/inputs/${enc(requestId)}`,
      body: response,
    });
  }

  /** Answer several open requests of the turn's wait at once, all or none (the
   *  approvals of one model answer are asked together: `turn.pending_inputs`). */
  answerMany(
    sessionId: string,
    turnId: string,
    answers: Record<string, Record<string, unknown>> | AnswersRequest["answers"],
  ): Promise<Turn> {
    const list = Array.isArray(answers)
      ? answers
      : Object.entries(answers).map(([request_id, response]) => ({ request_id, response }));
    const body: AnswersRequest = { answers: list };
    return this.read<Turn>({
      method: "POST",
      path: `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}/inputs`,
      body,
    });
  }

  /** Approve an open approval request (`reason` is kept with the answer). */
  approve(sessionId: string, turnId: string, requestId: string, reason = ""): Promise<Turn> {
    return this.answer(sessionId, turnId, requestId, reason ? { approved: true, reason } : { approved: true });
  }

  /** Deny an open approval request. */
  deny(sessionId: string, turnId: string, requestId: string, reason = ""): Promise<Turn> {
    return this.answer(sessionId, turnId, requestId, reason ? { approved: false, reason } : { approved: false });
  }

  /** The turn's attempts, steps and waits (no message content). */
  timeline(sessionId: string, turnId: string): Promise<Timeline> {
    return this.read<Timeline>({ method: "GET", path: `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}/timeline` });
  }

  // -- sessions ------------------------------------------------------------------------

  session(sessionId: string): Promise<Session> {
    return this.read<Session>({ method: "GET", path: `/v1/sessions/${enc(sessionId)}` });
  }

  /** A page of the tenant's sessions, newest first (`after`: the last page's `next`),
   * filtered as `GET /v1/sessions` says (state, agent, project, metadata, times). */
  sessions(query: ListQuery = {}): Promise<SessionPage> {
    return this.read<SessionPage>({ method: "GET", path: "/v1/sessions", query });
  }

  /** A page of the session's turns, newest first. */
  turns(sessionId: string, query: TurnsQuery = {}): Promise<TurnPage> {
    return this.read<TurnPage>({ method: "GET", path: `/v1/sessions/${enc(sessionId)}/turns`, query });
  }

  /** A page of the tenant's turns across its sessions that match the filters, newest
   * first (`metadata: ["customer=acme"]`, `state: ["failed"]`, …; `after`: the last
   * page's `next`). */
  searchTurns(query: TurnSearchQuery = {}): Promise<TurnPage> {
    return this.read<TurnPage>({ method: "GET", path: "/v1/turns", query });
  }

  /** A page of the provider-neutral transcript (`after`: the last page's `next`). */
  messages(sessionId: string, query: MessagesQuery = {}): Promise<MessagePage> {
    return this.read<MessagePage>({ method: "GET", path: `/v1/sessions/${enc(sessionId)}/messages`, query });
  }

  /** At most `limit` committed events after `after`, as one JSON page (410
   *  `resync_required` for a cursor before the retained journal). */
  eventPage(sessionId: string, query: { after?: number; limit?: number } = {}): Promise<EventPage> {
    return this.read<EventPage>({ method: "GET", path: `/v1/sessions/${enc(sessionId)}/events`, query });
  }

  /** A short-lived token to follow this session's events without the bearer token
   *  (`?stream_token=`); 503 `stream_tokens_not_configured` without a secret. */
  streamToken(sessionId: string): Promise<StreamToken> {
    return this.read<StreamToken>({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/stream-tokens` });
  }

  // -- the event stream ----------------------------------------------------------------

  /** The session's committed events with `seq > after`, in order, each once, live;
   *  reconnects from the last seq yielded whenever the stream drops (./follow.ts). */
  async *events(sessionId: string, options: Omit<FollowOptions, "deltas"> = {}): AsyncGenerator<Event> {
    for await (const item of follow(this, sessionId, { ...options, deltas: false })) {
      yield item as Event;
    }
  }

  /** As `events`, with the live model text (`Delta`) in between when `deltas`:
   *  speculative, lost on a reconnect, superseded by the committed `model.completed`. */
  stream(sessionId: string, options: FollowOptions = {}): AsyncGenerator<Event | Delta> {
    return follow(this, sessionId, options);
  }
}
