// #/limits: the tenant's limits (GET /v1/limits, docs/flow-control.md "max_running"):
// its own max_running, the one in force, who declared it and when. The API says
// whether the token may change them (may_declare: a tenant's admin); only then the
// page offers Set and Clear (PUT /v1/limits). A refusal (a 403 for a token whose role
// changed since, a 422 for a number out of bounds) shows as the problem and changes
// nothing on the page.

import { api } from "./api.js";
import { facts, h, main } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { fmtTime } from "./format.js";
import { crumbs, lifetime } from "./views.js";

export function limitsView() {
  crumbs(); // a page of the header's: no trail
  const gone = lifetime();
  const shown = h("dl", { cls: "facts", testid: "limits-facts" });
  const panel = h("section", { cls: "panel", testid: "limits" },
    h("h2", {}, "max_running"),
    h("p", { cls: "muted" },
      "At most this many of the tenant's turns run at once; the rest wait queued (never failed) " +
      "and start as slots free. Workers take a change up within a few seconds."),
    shown);
  const change = h("div", { testid: "limits-change" });
  main.append(h("section", { testid: "limits-view" },
    h("div", { cls: "heading" }, h("h1", {}, "Limits")), panel, change));

  function render(limits) {
    shown.replaceChildren(...facts([
      ["Declared", h("span", { testid: "limits-declared" }, own(limits))],
      ["In force", h("span", { testid: "limits-effective" }, effective(limits))],
      ["Declared by", h("span", { testid: "limits-updated-by" }, limits.updated_by || "—")],
      ["Declared at", h("span", { testid: "limits-updated-at" }, fmtTime(limits.updated_at))],
    ]));
    change.replaceChildren(limits.may_declare ? form(limits) : readOnly());
    panel.dataset.loaded = "true";
  }

  function form(limits) {
    const input = h("input", { type: "number", id: "limits-max-running", testid: "limits-input", min: 1, step: 1 });
    if (limits.max_running !== null) input.value = String(limits.max_running);
    const set = h("button", { type: "submit", testid: "limits-set" }, "Set");
    const clear = h("button", { type: "button", cls: "quiet", testid: "limits-clear", disabled: limits.max_running === null }, "Clear");
    // the API checks the bounds: its problem names them (no browser validation)
    const el = h("form", { cls: "panel", testid: "limits-form", novalidate: true },
      h("h2", {}, "Declare"),
      h("div", { cls: "field" },
        h("label", { for: input.id }, "max_running (1 or more; Clear: none of the tenant's own)"),
        input),
      h("div", { cls: "buttons" }, set, " ", clear));

    async function declare(value) {
      clearError();
      set.disabled = clear.disabled = true;
      try {
        const changed = await api("PUT", "/v1/limits", { max_running: value });
        if (!gone()) render(changed);
      } catch (err) {
        if (gone()) return;
        set.disabled = false;
        clear.disabled = limits.max_running === null;
        showError(err);
      }
    }

    el.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const value = input.valueAsNumber;
      if (Number.isNaN(value)) {
        showError(new Error("max_running: give a whole number (or Clear)"));
        return;
      }
      declare(value);
    });
    clear.addEventListener("click", () => declare(null));
    return el;
  }

  api("GET", "/v1/limits")
    .then((limits) => {
      if (!gone()) render(limits);
    })
    .catch((err) => {
      if (!gone()) showError(err);
    });
}

function readOnly() {
  return h("p", { cls: "muted", testid: "limits-read-only" },
    "Read only: a tenant's admin declares its limits (PUT /v1/limits, turnkeep limits --max-running N).");
}

function own(limits) {
  return limits.max_running === null ? "none" : String(limits.max_running);
}

function effective(limits) {
  const n = limits.effective_max_running;
  if (n === null) return "no limit";
  // none of the tenant's own: the deployment's TURNKEEP_MAX_RUNNING_PER_TENANT
  return limits.max_running === null ? `${n} (the deployment's default)` : String(n);
}
