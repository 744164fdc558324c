// @turnkeep/client: the typed client of a turnkeep API. The React hooks are in
// "@turnkeep/client/react" (./react.ts), so that React is needed only by who uses them.

export { type Admitted, type ClientOptions, TurnkeepClient, newTurnId } from "./client.js";
export type { Connection } from "./connection.js";
export { ResyncRequired, ApiError, Unreachable, problemError } from "./errors.js";
export { type FollowOptions, type StreamTokenSource, follow, resyncFromEarliest } from "./follow.js";
export { Cursor, type Frame, SSEParser, lines } from "./sse.js";
export * from "./types.js";
export type { components, operations, paths } from "./schema.js";
