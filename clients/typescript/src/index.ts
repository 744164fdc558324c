// @turnkeep/client: the typed client of a turnkeep API. The React hooks are in
// "@turnkeep/client/react" (./react.ts), so that React is needed only by who uses them.

export { type ClientOptions, TurnkeepClient } from "./client.js";
export type { Connection, Request } from "./connection.js";
export { ResyncRequired, ApiError, Unreachable, problemError } from "./errors.js";
export { type FollowOptions, type StreamTokenSource, follow, issueStreamToken, resyncFromEarliest } from "./follow.js";
export { SearchApi } from "./search.js";
export { SessionsApi } from "./sessions.js";
export { Cursor, type Frame, SSEParser, lines } from "./sse.js";
export { type Admitted, TurnsApi, newTurnId } from "./turns.js";
export * from "./types.js";
export type { components, operations, paths } from "./schema.js";
