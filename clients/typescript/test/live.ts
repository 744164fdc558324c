// What the tests against a live API share: its URL and tokens from the environment
// (tests/integration/test_typescript_client.py starts the API and a worker and sets
// them; a missing one fails the run, it never skips), a client, fresh ids.

import { randomUUID } from "node:crypto";

import { type ClientOptions, type Event, type Turn, type TurnRequest, TurnkeepClient } from "../src/index.js";

function need(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through tests/integration/test_typescript_client.py`);
  return value;
}

export const API_URL = need("TURNKEEP_URL");
/** tenant a's bearer token */
export const TOKEN = need("TURNKEEP_TOKEN");
/** tenant b's */
export const TOKEN_B = need("TURNKEEP_TOKEN_B");

/** A client of tenant a with short pauses between reconnections. */
export function client(options: Partial<ClientOptions> = {}): TurnkeepClient {
  return new TurnkeepClient({ url: API_URL, token: TOKEN, backoff: 50, ...options });
}

export function fresh(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function ask(agent: string, content = "Weather in Paris?"): TurnRequest {
  return { agent, input: [{ role: "user", content }] };
}

/** The turn once it waits for someone (the worker parked it on its input requests). */
export async function waiting(c: TurnkeepClient, sid: string, tid: string): Promise<Turn> {
  const turn = await c.turns.wait(sid, tid, 60);
  if (turn.state !== "waiting") throw new Error(`turn ${tid} is ${turn.state}, not waiting`);
  return turn;
}

/** The seqs of `events`, checked to be contiguous from `first`. */
export function contiguous(events: Event[], first: number): number[] {
  const seqs = events.map((e) => e.seq);
  const expected = seqs.map((_, i) => first + i);
  if (JSON.stringify(seqs) !== JSON.stringify(expected)) {
    throw new Error(`seqs not contiguous from ${first}: ${seqs.join(",")}`);
  }
  return seqs;
}
