// React hooks that follow a turn (`useTurn`) or a whole session (`useSession`) and
// survive a reload of the page.
//
// What survives is kept in a `TurnStorage` (the page's sessionStorage by default): for a
// turn, whether it was admitted, the last seq seen and whether it ended; for a session,
// the last seq seen and a submission under way. On a remount (a reload) the hook admits
// nothing again (a submission it cannot tell was answered is sent again with the same
// Idempotency-Key: a replay, never a second turn), reads the turn as it is now, and
// follows the journal from the last seq seen: no event is delivered twice, none is lost.

import { useCallback, useEffect, useRef, useState } from "react";

import type { TurnkeepClient } from "./client.js";
import { type Admitted, newTurnId } from "./turns.js";
import { ApiError } from "./errors.js";
import { type StreamTokenSource, resyncFromEarliest } from "./follow.js";
import type { Event, Turn, TurnRequest } from "./types.js";
import { isEvent, isTerminalEvent } from "./types.js";

/** Where a hook keeps what must outlive the page (sessionStorage's shape). */
export interface TurnStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

function pageStorage(): TurnStorage | null {
  try {
    return globalThis.sessionStorage ?? null;
  } catch {
    return null; // a sandboxed frame may refuse it
  }
}

function load<T>(storage: TurnStorage | null, key: string): T | null {
  const text = storage?.getItem(key) ?? null;
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

function keep(storage: TurnStorage | null, key: string, value: unknown): void {
  storage?.setItem(key, JSON.stringify(value));
}

/** The storage key of a turn's record (`useTurn`). */
export function turnKey(sessionId: string, turnId: string): string {
  return `turnkeep:turn:${sessionId}:${turnId}`;
}

/** The storage key of a session's record (`useSession`). */
export function sessionKey(sessionId: string): string {
  return `turnkeep:session:${sessionId}`;
}

interface SavedTurn {
  admitted: boolean;
  lastSeq: number | null;
  done: boolean;
}

interface SavedSession {
  lastSeq: number | null;
  pending: { turnId: string; request: TurnRequest } | null;
}

/** `fn`, never twice at once: a call while it runs runs it once more afterwards. */
function coalesced(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  return () => {
    if (running !== null) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await fn();
      } while (again);
    })().finally(() => {
      running = null;
    });
    return running;
  };
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

export type TurnStatus = "idle" | "admitting" | "following" | "done" | "error";

export interface UseTurnOptions {
  client: TurnkeepClient;
  sessionId: string;
  /** The turn's id, its Idempotency-Key: choose it once (e.g. in the page's URL) so that a
   *  reload names the same turn. */
  turnId: string;
  /** Admit this request (once) before following; without it, follow an admitted turn. */
  request?: TurnRequest | undefined;
  /** Where the hook keeps what outlives the page (default: sessionStorage; null: nothing). */
  storage?: TurnStorage | null | undefined;
  /** Follow with stream tokens rather than the bearer token (see `FollowOptions`). */
  streamToken?: StreamTokenSource | undefined;
  /** Gather the live model text in `text`. */
  deltas?: boolean | undefined;
  /** Each of the turn's committed events, once, across reloads. */
  onEvent?: ((event: Event) => void) | undefined;
}

export interface TurnView {
  /** The turn as last read (after admission, on a reload, after each of its events). */
  turn: Turn | null;
  /** The turn's committed events delivered since this mount (a reload starts after the
   *  last one delivered before it). */
  events: Event[];
  /** The live model text of the step under way (with `deltas`). */
  text: string;
  status: TurnStatus;
  error: Error | null;
  /** The session's last seq seen. */
  lastSeq: number | null;
  /** This mount's admission: true admitted, false a replay, null none made. */
  created: boolean | null;
  cancel(): Promise<Turn>;
  answer(requestId: string, response: Record<string, unknown>): Promise<Turn>;
  answerMany(answers: Record<string, Record<string, unknown>>): Promise<Turn>;
}

/** Follow one turn to its end, admitting it first when `request` is given. */
export function useTurn(options: UseTurnOptions): TurnView {
  const { client, sessionId, turnId } = options;
  const latest = useRef(options);
  latest.current = options;
  const [turn, setTurn] = useState<Turn | null>(null);
  const [events, setEvents] = useState<Event[]>([]);
  const [text, setText] = useState("");
  const [status, setStatus] = useState<TurnStatus>("idle");
  const [error, setError] = useState<Error | null>(null);
  const [lastSeq, setLastSeq] = useState<number | null>(null);
  const [created, setCreated] = useState<boolean | null>(null);

  useEffect(() => {
    const { request, streamToken, deltas } = latest.current;
    const storage = latest.current.storage === undefined ? pageStorage() : latest.current.storage;
    const key = turnKey(sessionId, turnId);
    const abort = new AbortController();
    const { signal } = abort;
    const saved: SavedTurn = load<SavedTurn>(storage, key) ?? { admitted: false, lastSeq: null, done: false };
    setTurn(null);
    setEvents([]);
    setText("");
    setError(null);
    setCreated(null);
    setLastSeq(saved.lastSeq);
    const refresh = coalesced(async () => {
      const read = await client.turns.get(sessionId, turnId, { signal });
      if (!signal.aborted) setTurn(read);
    });

    async function run(): Promise<void> {
      let current: Turn;
      if (!saved.admitted && request !== undefined) {
        setStatus("admitting");
        const admitted = await client.turns.admit(sessionId, request, { idempotencyKey: turnId, signal });
        current = admitted.turn;
        setCreated(admitted.created);
      } else {
        current = await client.turns.get(sessionId, turnId, { signal });
      }
      saved.admitted = true;
      keep(storage, key, saved);
      if (signal.aborted) return;
      setTurn(current);
      if (saved.done) {
        setStatus("done");
        return;
      }
      setStatus("following");
      const stream = client.sessions.stream(sessionId, {
        after: saved.lastSeq ?? Math.max(0, current.accepted_seq - 1),
        deltas,
        signal,
        streamToken,
        // the events in between are gone: what they said is in the turn, read again
        onResync: async (err) => {
          await refresh();
          return resyncFromEarliest(err);
        },
      });
      for await (const item of stream) {
        if (!isEvent(item)) {
          if (item.turn_id === turnId) setText((t) => t + item.text);
          continue;
        }
        const ours = item.turn_id === turnId;
        if (ours) {
          setEvents((prev) => [...prev, item]);
          latest.current.onEvent?.(item);
          if (item.type === "model.completed") setText("");
          saved.done = isTerminalEvent(item);
        }
        saved.lastSeq = item.seq;
        keep(storage, key, saved);
        setLastSeq(item.seq);
        if (saved.done) {
          await refresh();
          setStatus("done");
          return;
        }
        if (ours) refresh().catch(() => undefined); // the next event or the end reads it again
      }
    }

    run().catch((err: unknown) => {
      if (signal.aborted) return;
      setError(asError(err));
      setStatus("error");
    });
    return () => abort.abort();
  }, [client, sessionId, turnId]);

  const settle = useCallback((answer: Promise<Turn>) => answer.then((t) => (setTurn(t), t)), []);
  const cancel = useCallback(() => settle(client.turns.cancel(sessionId, turnId)), [client, sessionId, turnId, settle]);
  const answer = useCallback(
    (requestId: string, response: Record<string, unknown>) =>
      settle(client.turns.answer(sessionId, turnId, requestId, response)),
    [client, sessionId, turnId, settle],
  );
  const answerMany = useCallback(
    (answers: Record<string, Record<string, unknown>>) => settle(client.turns.answerMany(sessionId, turnId, answers)),
    [client, sessionId, turnId, settle],
  );
  return { turn, events, text, status, error, lastSeq, created, cancel, answer, answerMany };
}

export interface UseSessionOptions {
  client: TurnkeepClient;
  sessionId: string;
  storage?: TurnStorage | null | undefined;
  streamToken?: StreamTokenSource | undefined;
  deltas?: boolean | undefined;
  /** Each committed event of the session, once, across reloads. */
  onEvent?: ((event: Event) => void) | undefined;
}

export interface SessionView {
  /** The session's committed events delivered since this mount. */
  events: Event[];
  /** The live model text of the step under way (with `deltas`). */
  text: string;
  /** empty: the session has no turn yet (the first `submit` creates it, and the hook
   *  follows it from then on) */
  status: "idle" | "empty" | "following" | "error";
  error: Error | null;
  lastSeq: number | null;
  /** Admit a turn in the session; kept as under way until answered, so a reload in
   *  between sends it again under the same Idempotency-Key (a replay). */
  submit(request: TurnRequest, options?: { turnId?: string }): Promise<Admitted>;
}

/** Follow a whole session (every turn's events), from where the page last was. */
export function useSession(options: UseSessionOptions): SessionView {
  const { client, sessionId } = options;
  const latest = useRef(options);
  latest.current = options;
  const [events, setEvents] = useState<Event[]>([]);
  const [text, setText] = useState("");
  const [status, setStatus] = useState<SessionView["status"]>("idle");
  const [error, setError] = useState<Error | null>(null);
  const [lastSeq, setLastSeq] = useState<number | null>(null);
  // the record both the effect and `submit` write
  const record = useRef<{ storage: TurnStorage | null; saved: SavedSession } | null>(null);
  // a session no turn created yet answers 404: followed once a submission creates it
  const missing = useRef(false);
  const admissions = useRef(0);
  const [created, setCreated] = useState(0);

  const submitWith = useCallback(
    async (request: TurnRequest, turnId: string, signal?: AbortSignal): Promise<Admitted> => {
      const held = record.current;
      const key = sessionKey(sessionId);
      if (held) {
        held.saved.pending = { turnId, request };
        keep(held.storage, key, held.saved);
      }
      const admitted = await client.turns.admit(sessionId, request, { idempotencyKey: turnId, signal });
      if (held && held.saved.pending?.turnId === turnId) {
        held.saved.pending = null;
        keep(held.storage, key, held.saved);
      }
      admissions.current += 1;
      if (missing.current) {
        missing.current = false;
        setCreated((n) => n + 1);
      }
      return admitted;
    },
    [client, sessionId],
  );

  useEffect(() => {
    const { streamToken, deltas } = latest.current;
    const storage = latest.current.storage === undefined ? pageStorage() : latest.current.storage;
    const key = sessionKey(sessionId);
    const saved = load<SavedSession>(storage, key) ?? { lastSeq: null, pending: null };
    record.current = { storage, saved };
    const abort = new AbortController();
    const { signal } = abort;
    const admitted = admissions.current;
    setEvents([]);
    setText("");
    setError(null);
    setLastSeq(saved.lastSeq);

    async function run(): Promise<void> {
      if (saved.pending !== null) await submitWith(saved.pending.request, saved.pending.turnId, signal);
      setStatus("following");
      const stream = client.sessions.stream(sessionId, {
        after: saved.lastSeq ?? undefined,
        deltas,
        signal,
        streamToken,
        onResync: resyncFromEarliest,
      });
      for await (const item of stream) {
        if (!isEvent(item)) {
          setText((t) => t + item.text);
          continue;
        }
        setEvents((prev) => [...prev, item]);
        latest.current.onEvent?.(item);
        if (item.type === "model.completed") setText("");
        saved.lastSeq = item.seq;
        keep(storage, key, saved);
        setLastSeq(item.seq);
      }
    }

    run().catch((err: unknown) => {
      if (signal.aborted) return;
      if (err instanceof ApiError && err.status === 404 && saved.lastSeq === null) {
        // no turn made the session yet; if one did meanwhile, follow it now
        if (admissions.current !== admitted) setCreated((n) => n + 1);
        else missing.current = true;
        setStatus("empty");
        return;
      }
      setError(asError(err));
      setStatus("error");
    });
    return () => {
      abort.abort();
      record.current = null;
    };
  }, [client, sessionId, submitWith, created]);

  const submit = useCallback(
    (request: TurnRequest, submitOptions: { turnId?: string } = {}) =>
      submitWith(request, submitOptions.turnId ?? newTurnId()),
    [submitWith],
  );
  return { events, text, status, error, lastSeq, submit };
}
