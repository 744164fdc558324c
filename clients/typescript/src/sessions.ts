// `client.sessions`: a tenant's sessions (`/v1/sessions…`): read and list them, their
// transcript and journal, and follow their events live (./follow.ts).

import { type Connection, read } from "./connection.js";
import { type FollowOptions, follow, issueStreamToken } from "./follow.js";
import { enc } from "./http.js";
import type {
  Delta,
  Event,
  EventPage,
  ListQuery,
  MessagePage,
  MessagesQuery,
  Session,
  SessionPage,
  StreamToken,
} from "./types.js";

export class SessionsApi {
  constructor(private readonly connection: Connection) {}

  get(sessionId: string): Promise<Session> {
    return read<Session>(this.connection, { method: "GET", path: `/v1/sessions/${enc(sessionId)}` });
  }

  /** A page of the tenant's sessions, newest first (`after`: the last page's `next`),
   * filtered as `GET /v1/sessions` says (state, agent, project, metadata, times). */
  list(query: ListQuery = {}): Promise<SessionPage> {
    return read<SessionPage>(this.connection, { method: "GET", path: "/v1/sessions", query });
  }

  /** A page of the provider-neutral transcript (`after`: the last page's `next`). */
  messages(sessionId: string, query: MessagesQuery = {}): Promise<MessagePage> {
    return read<MessagePage>(this.connection, {
      method: "GET",
      path: `/v1/sessions/${enc(sessionId)}/messages`,
      query,
    });
  }

  /** At most `limit` committed events after `after`, as one JSON page (410
   *  `resync_required` for a cursor before the retained journal). */
  eventPage(sessionId: string, query: { after?: number; limit?: number } = {}): Promise<EventPage> {
    return read<EventPage>(this.connection, { method: "GET", path: `/v1/sessions/${enc(sessionId)}/events`, query });
  }

  /** A short-lived token to follow this session's events without the bearer token
   *  (`?stream_token=`); 503 `stream_tokens_not_configured` without a secret. */
  streamToken(sessionId: string): Promise<StreamToken> {
    return issueStreamToken(this.connection, sessionId);
  }

  /** The session's committed events with `seq > after`, in order, each once, live;
   *  reconnects from the last seq yielded whenever the stream drops (./follow.ts). */
  async *events(sessionId: string, options: Omit<FollowOptions, "deltas"> = {}): AsyncGenerator<Event> {
    for await (const item of follow(this.connection, sessionId, { ...options, deltas: false })) {
      yield item as Event;
    }
  }

  /** As `events`, with the live model text (`Delta`) in between when `deltas`:
   *  speculative, lost on a reconnect, superseded by the committed `model.completed`. */
  stream(sessionId: string, options: FollowOptions = {}): AsyncGenerator<Event | Delta> {
    return follow(this.connection, sessionId, options);
  }
}
