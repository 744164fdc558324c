// A turn's open request on its page: what is asked, and the form that answers it
// (forms.js) at POST …/turns/{tid}/inputs/{request_id}.

import { api } from "./api.js";
import { enc, facts, h } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { fmtTime, json } from "./format.js";
import { inputForm } from "./forms.js";
import { TERMINAL_STATES } from "./states.js";

/** The panel ``el`` of turn ``base`` (its API path): ``render(turn)`` shows the turn's
 *  open request, or hides the panel; ``refresh`` reloads the turn once answered. */
export function pendingInput({ el, base, gone, refresh }) {
  let openRequest = null; // the request id the pending form was built for

  function render(t) {
    const p = t.pending_input;
    if (!p || p.resolved || TERMINAL_STATES.includes(t.state)) {
      el.hidden = true;
      el.replaceChildren();
      openRequest = null;
      return;
    }
    if (openRequest === p.request_id) return; // keep what the person typed
    openRequest = p.request_id;
    el.replaceChildren(...panel(p));
    el.hidden = false;
  }

  function panel(p) {
    const tool = p.tool && typeof p.tool === "object" ? p.tool : null;
    const who = p.answered_by && typeof p.answered_by === "object"
      ? Object.entries(p.answered_by).map(([k, v]) => `${k} ${v}`).join(", ")
      : "—";
    const details = facts([
      ["Request", h("code", { testid: "pending-request-id" }, p.request_id)],
      ["Kind", h("span", { testid: "pending-kind" }, p.kind)],
      ["Step", p.step === null || p.step === undefined ? "—" : String(p.step)],
      ["Tool", tool ? `${tool.name ?? "?"}${tool.version ? " v" + tool.version : ""}` : "—"],
      ["Expires", fmtTime(p.expires_at)],
      ["May answer", who],
    ]);
    const out = [h("h2", {}, "Waiting for input: ", p.kind), h("dl", { cls: "facts" }, details)];
    if (p.arguments) out.push(h("h3", {}, "Arguments"), h("pre", { testid: "pending-arguments" }, json(p.arguments)));
    if (p.detail && Object.keys(p.detail).length) out.push(h("h3", {}, "Detail"), h("pre", {}, json(p.detail)));
    out.push(inputForm(p, answer));
    return out;
  }

  async function answer(p, body, buttons) {
    clearError();
    buttons.forEach((b) => (b.disabled = true));
    try {
      await api("POST", `${base}/inputs/${enc(p.request_id)}`, body);
      if (gone()) return;
      el.replaceChildren(h("p", { testid: "answer-sent" }, "Answer sent: the turn goes on."));
      openRequest = p.request_id;
      refresh();
    } catch (err) {
      if (!gone()) showError(err);
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  return { render };
}
