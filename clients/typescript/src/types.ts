// Names for the API's wire shapes. Every one is read from the types generated from the
// OpenAPI document (./schema.ts, `make ts-types`), never written out by hand: a field
// the API adds or renames changes them, and tsc then says which use no longer fits.

import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

export type Turn = Schemas["Turn"];
export type TurnState = Schemas["TurnState"];
export type TurnRequest = Schemas["TurnRequest"];
export type TurnPage = Schemas["TurnPage"];
export type PendingInput = Schemas["PendingInput"];
export type Session = Schemas["Session"];
export type SessionPage = Schemas["SessionPage"];
export type Event = Schemas["Event"];
export type EventType = Schemas["EventType"];
export type EventPage = Schemas["EventPage"];
export type Message = Schemas["Message"];
export type MessagePage = Schemas["MessagePage"];
export type Timeline = Schemas["Timeline"];
export type StreamToken = Schemas["StreamToken"];
export type AnswersRequest = Schemas["AnswersRequest"];
export type OneAnswer = Schemas["OneAnswer"];
export type Problem = Schemas["Problem"];
/** Live model text of a step (`event: model.delta`): speculative, never numbered. */
export type Delta = Schemas["Delta"];
/** The final frame of a stream whose reader lagged: resume from `after`. */
export type StreamResume = Schemas["StreamResume"];
/** The final frame of a stream the retention cut overtook. */
export type StreamResyncRequired = Schemas["StreamResyncRequired"];

/** The query a listing of sessions or a session's turns takes. */
export type ListQuery = NonNullable<paths["/v1/sessions"]["get"]["parameters"]["query"]>;
/** The query of a page of one session's turns. */
export type TurnsQuery = NonNullable<paths["/v1/sessions/{sid}/turns"]["get"]["parameters"]["query"]>;
/** The filters of a search across the tenant's turns (`GET /v1/turns`, docs/search.md). */
export type TurnSearchQuery = NonNullable<paths["/v1/turns"]["get"]["parameters"]["query"]>;
/** The query of a page of a session's transcript. */
export type MessagesQuery = NonNullable<
  paths["/v1/sessions/{sid}/messages"]["get"]["parameters"]["query"]
>;

/** The events that end a turn (each a name of the generated `EventType`). */
export const TERMINAL_EVENTS = [
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
] as const satisfies readonly EventType[];

/** The states a turn never leaves (each a name of the generated `TurnState`). */
export const TERMINAL_STATES = [
  "completed",
  "failed",
  "cancelled",
] as const satisfies readonly TurnState[];

export function isTerminalEvent(event: Pick<Event, "type">): boolean {
  return (TERMINAL_EVENTS as readonly string[]).includes(event.type);
}

export function isTerminalState(state: TurnState): boolean {
  return (TERMINAL_STATES as readonly string[]).includes(state);
}

/** A committed event rather than a delta (a delta has no `seq`). */
export function isEvent(item: Event | Delta): item is Event {
  return typeof (item as Partial<Event>).seq === "number";
}
