// What a journal event says in its row on a turn's page: its content in a line (the
// timeline carries none), clipped.

import { clip, fmtTime, json } from "./format.js";

export function eventDetail(e) {
  const d = e.data || {};
  switch (e.type) {
    case "turn.accepted": {
      const given = d.input && Array.isArray(d.input.messages) ? d.input.messages : [];
      return given
        .map((m) => (m && typeof m.content === "string" ? `${m.role ?? "?"}: ${clip(m.content, 200)}` : ""))
        .filter(Boolean)
        .join(" | ");
    }
    case "model.completed": {
      const m = d.message || {};
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls.map((c) => c && c.name).filter(Boolean) : [];
      return clip(m.content || "", 300) + (calls.length ? ` → calls ${calls.join(", ")}` : "");
    }
    case "tool.completed":
    case "tool.interrupted": {
      const m = d.message || {};
      return `${d.tool || m.name || "tool"}: ${clip(m.content ?? d.error ?? "", 300)}`;
    }
    case "input.requested":
      return `${d.kind || "input"} ${d.request_id || ""}`;
    case "input.resolved":
      return `${d.request_id || ""} by ${d.by || "?"}`;
    case "turn.started":
      return `attempt ${d.attempt ?? "?"}`;
    case "turn.paced":
      return `until ${fmtTime(d.until)}, by rate limit ${d.limit || "?"} (${d.reason || "?"})`;
    case "turn.completed":
      return clip(json(d.result), 300);
    case "turn.failed":
      return clip(json(d.error), 300);
    default:
      return "";
  }
}
