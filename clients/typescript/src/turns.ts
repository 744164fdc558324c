// `client.turns`: a session's turns (`/v1/sessions/{sid}/turns…`): admit one, read it,
// wait for it, cancel it, answer its input requests, list them.

import { type Connection, read } from "./connection.js";
import { enc } from "./http.js";
import type { AnswersRequest, Timeline, Turn, TurnPage, TurnRequest, TurnsQuery } from "./types.js";
import { isTerminalState } from "./types.js";

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

function path(sessionId: string, turnId: string, tail = ""): string {
  return `/v1/sessions/${enc(sessionId)}/turns/${enc(turnId)}${tail}`;
}

export class TurnsApi {
  constructor(private readonly connection: Connection) {}

  /** Admit a turn. `idempotencyKey` is its id: the same key with the same request
   *  answers the stored turn (`created: false`), with another request 409
   *  `idempotency_conflict`. Without one a new id is made for this call. */
  async admit(
    sessionId: string,
    request: TurnRequest,
    options: { idempotencyKey?: string | undefined; signal?: AbortSignal | undefined } = {},
  ): Promise<Admitted> {
    const { body, response } = await this.connection.call<Turn>({
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
  get(sessionId: string, turnId: string, options: { wait?: number; signal?: AbortSignal } = {}): Promise<Turn> {
    return read<Turn>(this.connection, {
      method: "GET",
      path: path(sessionId, turnId),
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
      const options = last ? { signal } : { wait: Math.max(Math.min(left, this.connection.poll), 0.001), signal };
      const turn = await this.get(sessionId, turnId, options as { wait?: number; signal?: AbortSignal });
      const asked = turn.pending_input != null && !turn.pending_input.resolved;
      if (last || isTerminalState(turn.state) || asked) return turn;
    }
  }

  /** Request cancellation: at once for a turn no worker steps, else at its next safe
   *  point. 409 `turn_not_active` once it has ended. */
  cancel(sessionId: string, turnId: string): Promise<Turn> {
    return read<Turn>(this.connection, { method: "POST", path: path(sessionId, turnId, "/cancel") });
  }

  /** Answer the turn's open input request (`{approved: true}`, a question's answer…). */
  answer(sessionId: string, turnId: string, requestId: string, response: Record<string, unknown>): Promise<Turn> {
    return read<Turn>(this.connection, {
      method: "POST",
      path: path(sessionId, turnId, `/inputs/${enc(requestId)}`),
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
    return read<Turn>(this.connection, { method: "POST", path: path(sessionId, turnId, "/inputs"), body });
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
    return read<Timeline>(this.connection, { method: "GET", path: path(sessionId, turnId, "/timeline") });
  }

  /** A page of the session's turns, newest first (`after`: the last page's `next`). */
  list(sessionId: string, query: TurnsQuery = {}): Promise<TurnPage> {
    return read<TurnPage>(this.connection, { method: "GET", path: `/v1/sessions/${enc(sessionId)}/turns`, query });
  }
}
