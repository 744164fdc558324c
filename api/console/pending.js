// A turn's open requests on its page: what each asks, the form that answers it
// (forms.js) at POST …/turns/{tid}/inputs/{request_id}, and for approvals asked
// together one Approve all / Deny all (POST …/turns/{tid}/inputs).

import { api } from "./api.js";
import { enc, facts, h } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { fmtTime, json } from "./format.js";
import { inputForm } from "./forms.js";
import { TERMINAL_STATES } from "./states.js";

/** The panel ``el`` of turn ``base`` (its API path): ``render(turn)`` shows the turn's
 *  open request, or hides the panel; ``refresh`` reloads the turn once answered. */
export function pendingInput({ el, base, gone, refresh }) {
  let openKey = null; // the request ids the shown forms were built for

  function render(t) {
    // every request of the turn's wait (the approvals of one model answer are asked
    // together: runtime/input_groups.py); an older API answers pending_input alone
    const lone = t.pending_input && !t.pending_input.resolved ? [t.pending_input] : [];
    const open = Array.isArray(t.pending_inputs) && t.pending_inputs.length ? t.pending_inputs : lone;
    if (!open.length || TERMINAL_STATES.includes(t.state)) {
      el.hidden = true;
      el.replaceChildren();
      openKey = null;
      return;
    }
    const key = open.map((p) => p.request_id).join(" ");
    if (openKey === key) return; // keep what the person typed
    openKey = key;
    const parts = [];
    const approvals = open.filter((p) => p.kind === "approval");
    if (open.length > 1) {
      parts.push(h("h2", {}, `Waiting for ${open.length} answers`));
      if (approvals.length > 1) parts.push(together(approvals));
    }
    for (const p of open) {
      parts.push(h("div", { cls: "pending-one", testid: "pending-request", "data-request-id": p.request_id }, ...panel(p)));
    }
    el.replaceChildren(...parts);
    el.hidden = false;
  }

  // one POST for every open approval: all or none (POST …/inputs)
  function together(approvals) {
    const buttons = [];
    const decide = (approved) => async () => {
      clearError();
      buttons.forEach((b) => (b.disabled = true));
      const answers = approvals.map((p) => ({ request_id: p.request_id, response: { approved } }));
      try {
        await api("POST", `${base}/inputs`, { answers });
        if (gone()) return;
        el.replaceChildren(h("p", { testid: "answer-sent" }, "Answers sent: the turn goes on."));
        openKey = null;
        refresh();
      } catch (err) {
        if (!gone()) showError(err);
        buttons.forEach((b) => (b.disabled = false));
      }
    };
    const all = h("button", { type: "button", testid: "approve-all" }, `Approve all ${approvals.length}`);
    const none = h("button", { type: "button", cls: "danger", testid: "deny-all" }, "Deny all");
    all.addEventListener("click", decide(true));
    none.addEventListener("click", decide(false));
    buttons.push(all, none);
    return h("p", { cls: "together" }, all, " ", none);
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
    if (p.answered_by && p.answered_by.runtime) {
      // a timer or a delegation: the runtime answers it, nobody else may
      const when = p.kind === "timer" && p.detail ? ` at ${fmtTime(p.detail.wake_at)}` : " once its children end";
      out.push(h("p", { cls: "muted", testid: "runtime-answers" }, `The runtime answers this${when}.`));
    } else {
      out.push(inputForm(p, answer));
    }
    return out;
  }

  async function answer(p, body, buttons) {
    clearError();
    buttons.forEach((b) => (b.disabled = true));
    try {
      await api("POST", `${base}/inputs/${enc(p.request_id)}`, body);
      if (gone()) return;
      // the others of its wait stay open: the refreshed turn shows them
      el.replaceChildren(h("p", { testid: "answer-sent" }, "Answer sent: the turn goes on."));
      openKey = null;
      refresh();
    } catch (err) {
      if (!gone()) showError(err);
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  return { render };
}
