// The client's errors: every problem the API answers (`application/problem+json`,
// its `code` stable, its `status` the HTTP one) becomes an `ApiError`, a
// `resync_required` a `ResyncRequired`; a request that got no answer `Unreachable`.
// As the Python client's (turnkeep/client/errors.py).

import type { Problem } from "./types.js";

/** Raised when the API answers a problem: `code` is its stable code (`not_found`,
 *  `idempotency_conflict`, `validation_error`, …), `status` the HTTP status (null when
 *  no answer came), `problem` the whole body. */
export class ApiError extends Error {
  readonly code: string;
  readonly detail: string;
  readonly status: number | null;
  readonly problem: Partial<Problem>;

  constructor(code: string, detail: string, status: number | null = null, problem: Partial<Problem> = {}) {
    super(status === null ? `${code}: ${detail}` : `${status} ${code}: ${detail}`);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.status = status;
    this.problem = problem;
  }

  /** Seconds the API asked to wait before a retry (429, some 503), when it said. */
  retryAfter: number | null = null;
}

/** Raised when the API cannot be reached, or an event stream failed too often in a row. */
export class Unreachable extends ApiError {
  constructor(detail: string) {
    super("unreachable", detail);
  }
}

/** Raised when an event cursor is before the earliest retained seq (410), or a stream
 *  ends because the retention cut passed it: rebuild what you show from the turns,
 *  then follow on from `earliest - 1`. */
export class ResyncRequired extends ApiError {
  /** the cursor that was asked for */
  get requested(): number {
    return this.problem.requested ?? 0;
  }

  /** the earliest seq the journal still holds */
  get earliest(): number {
    return this.problem.earliest ?? 0;
  }

  /** the session's head seq when it answered */
  get latest(): number {
    return this.problem.latest ?? 0;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The error a problem body (or any answer of 400 or more) stands for. */
export function problemError(status: number, body: unknown, retryAfter: string | null = null): ApiError {
  const problem: Partial<Problem> = isObject(body) ? (body as Partial<Problem>) : {};
  const code = typeof problem.code === "string" ? problem.code : "http_error";
  const detail = typeof problem.detail === "string" ? problem.detail : `HTTP ${status}`;
  const kind = code === "resync_required" ? ResyncRequired : ApiError;
  const error = new kind(code, detail, status, problem);
  const seconds = retryAfter === null ? NaN : Number.parseInt(retryAfter, 10);
  error.retryAfter = Number.isFinite(seconds) ? seconds : null;
  return error;
}

/** The error of an answer of 400 or more, its body read (a problem, or not JSON). */
export async function responseError(response: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return problemError(response.status, body, response.headers.get("retry-after"));
}
