// Reading a session's event stream, without I/O of its own: the text/event-stream
// framing (`SSEParser`), the lines of a fetch body (`lines`), and the `Cursor` that
// turns frames into events, knows where the stream stands and how long to pause after
// a drop. The behaviour is the Python client's (turnkeep/client/sse.py); the frames
// are the API's (api/sse.py): committed events with `id: <seq>`, `model.delta` without
// one, heartbeats as comments, and two final frames, `stream.resume` and
// `stream.resync_required`.

import { ResyncRequired, ApiError, Unreachable } from "./errors.js";
import type { Delta, Event, StreamResume, StreamResyncRequired } from "./types.js";

/** One dispatched frame; `comment` for a `:` line (the heartbeat). */
export interface Frame {
  event: string;
  id: string | null;
  data: string[];
  comment: boolean;
}

function blank(): Frame {
  return { event: "message", id: null, data: [], comment: false };
}

/** The text/event-stream framing, fed one line at a time (without its end of line). */
export class SSEParser {
  private frame: Frame = blank();
  private fields = false;

  feed(line: string): Frame | null {
    if (line === "") {
      const { frame, fields } = this;
      this.frame = blank();
      this.fields = false;
      return fields ? frame : null;
    }
    if (line.startsWith(":")) return { ...blank(), comment: true };
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    this.fields = true;
    if (name === "data") this.frame.data.push(value);
    else if (name === "event") this.frame.event = value;
    else if (name === "id") this.frame.id = value;
    return null;
  }
}

/** The lines of a UTF-8 body, ends of line (`\n`, `\r\n` or `\r`) removed. */
export async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let rest = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      rest += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let start = 0;
      for (let i = 0; i < rest.length; i++) {
        const c = rest[i];
        if (c !== "\n" && c !== "\r") continue;
        // a \r last in the chunk may be the first half of \r\n: wait for the next one
        if (c === "\r" && i === rest.length - 1 && !done) break;
        yield rest.slice(start, i);
        if (c === "\r" && rest[i + 1] === "\n") i++;
        start = i + 1;
      }
      rest = rest.slice(start);
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

/** The stream ended or failed in a way its next connection recovers from. */
export class Reconnect extends Error {}

function json(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** Where a followed stream stands, and how it resumes: after every committed event it
 *  yielded, from that seq; a connection that delivered nothing at all (not even a
 *  heartbeat) counts as a failure, and `retries` failures in a row give up. */
export class Cursor {
  failures = 0;
  private parser = new SSEParser();

  constructor(
    public last: number,
    readonly retries: number,
    /** the first pause after a drop, in ms; it doubles, up to `maxBackoff` */
    readonly backoff: number,
    readonly maxBackoff = 5000,
  ) {}

  /** A connection opened: the framing starts afresh. */
  opened(): void {
    this.parser = new SSEParser();
  }

  /** What one line of the stream completes, if anything. */
  line(line: string, deltas = false): Event | Delta | null {
    const frame = this.parser.feed(line);
    return frame === null ? null : this.take(frame, deltas);
  }

  take(frame: Frame, deltas = false): Event | Delta | null {
    if (frame.comment) {
      this.failures = 0; // a heartbeat: the connection is alive
      return null;
    }
    const data = frame.data.join("\n");
    if (frame.event === "stream.resume") {
      // a lagging reader: the journal fills the gap on the next connection
      const resume = json(data) as Partial<StreamResume> | null;
      throw new Reconnect(`stream.resume after ${resume?.after ?? this.last}`);
    }
    if (frame.event === "stream.resync_required") {
      const info = (json(data) ?? {}) as Partial<StreamResyncRequired>;
      throw new ResyncRequired("resync_required", "the retention cut passed the cursor", null, info);
    }
    this.failures = 0;
    if (frame.id === null) {
      // model.delta: speculative, never numbered; not worth failing the stream for
      if (!deltas || frame.event !== "model.delta") return null;
      const delta = json(data);
      return typeof delta === "object" && delta !== null ? (delta as Delta) : null;
    }
    const event = json(data) as Event | null;
    if (event === null || typeof event.seq !== "number" || typeof event.type !== "string") {
      // reconnecting would read the same frame again
      throw new ApiError("invalid_event", `event ${frame.id} is not an Event`);
    }
    if (event.seq <= this.last) return null;
    this.last = event.seq;
    return event;
  }

  /** The pause before the next connection, in ms; `Unreachable` past `retries`. */
  dropped(why: unknown): number {
    this.failures += 1;
    if (this.failures > this.retries) {
      const reason = why instanceof Error ? why.message : String(why);
      throw new Unreachable(`the event stream failed ${this.failures} times in a row: ${reason}`);
    }
    return Math.min(this.backoff * 2 ** (this.failures - 1), this.maxBackoff);
  }
}
