// Deleting a session (docs/erasure.md): a button, then a confirmation naming what
// goes, then DELETE /v1/sessions/{sid}; and a deleted session's tombstone, which its
// view shows in place of its turns (every read of it answers 410 session_deleted).

import { api } from "./api.js";
import { enc, facts, h } from "./dom.js";
import { showError } from "./errors.js";
import { fmtTime } from "./format.js";

/** The tombstone as facts: who deleted it, when, and whether it is erased yet. */
export function tombstoneFacts(t) {
  return facts([
    ["Deleted", fmtTime(t.deleted_at)],
    ["By", t.deleted_by || (t.reason === "expired" ? "its TTL" : "—")],
    ["Erased", t.erased_at ? fmtTime(t.erased_at) : "erasing…"],
  ]);
}

/** The Delete button and its confirmation; ``done(tombstone)`` once it is deleted. */
export function deleteControl(sid, done) {
  const start = h("button", { type: "button", cls: "danger", testid: "session-delete" }, "Delete session");
  const yes = h("button", { type: "button", cls: "danger", testid: "session-delete-confirm" }, "Delete and erase");
  const no = h("button", { type: "button", cls: "quiet", testid: "session-delete-cancel" }, "Keep it");
  const ask = h(
    "div",
    { cls: "confirm", testid: "session-delete-ask", hidden: true, role: "alertdialog" },
    h("p", {}, "Delete session ", h("code", {}, sid),
      "? Its active turns are cancelled and everything it held (turns, events, attachments, ",
      "memory written from it) is erased. This cannot be undone."),
    h("div", { cls: "buttons" }, yes, " ", no),
  );
  start.addEventListener("click", () => {
    ask.hidden = false;
    start.hidden = true;
    no.focus();
  });
  no.addEventListener("click", () => {
    ask.hidden = true;
    start.hidden = false;
  });
  yes.addEventListener("click", async () => {
    yes.disabled = no.disabled = true;
    try {
      const tombstone = await api("DELETE", `/v1/sessions/${enc(sid)}`);
      ask.hidden = true;
      done(tombstone);
    } catch (err) {
      yes.disabled = no.disabled = false;
      showError(err);
    }
  });
  return { start, ask };
}
