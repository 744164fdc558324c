// Answer forms made from a pending request's response schema: Approve / Deny for an
// approval, a field per property otherwise, and the outcome of a reconciliation.
// Each calls ``answer(p, body, buttons)`` (pending.js) with what the person gave.

import { h } from "./dom.js";
import { showError } from "./errors.js";

export function parseJson(text, what) {
  if (!text.trim()) throw new Error(`${what}: a JSON value is needed`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what}: not valid JSON`);
  }
}

function typeOf(schema) {
  const t = schema.type;
  if (Array.isArray(t)) return t.find((x) => x !== "null") || "string";
  return t;
}

let fieldCount = 0;

/** A form field for one property of a response schema, with how to read it back. */
function field(name, schema, required, kind) {
  fieldCount += 1;
  const id = `field-${fieldCount}`;
  const title = name === null ? "Answer (JSON)" : name;
  const label = h("label", { for: id }, title, required ? h("span", { cls: "req" }, " *") : null);
  const hint = typeof schema.description === "string" ? h("small", { cls: "muted" }, schema.description) : null;
  const testid = `field-${name === null ? "body" : name}`;
  const type = typeOf(schema);
  const options = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : null;
  let input;
  let read;
  if (options) {
    input = h("select", { id, testid },
      required ? null : h("option", { value: "" }, "—"),
      options.map((o, i) => h("option", { value: String(i) }, typeof o === "string" ? o : JSON.stringify(o))));
    read = () => (input.value === "" ? undefined : options[Number(input.value)]);
  } else if (type === "boolean") {
    input = h("input", { id, testid, type: "checkbox" });
    read = () => input.checked;
  } else if (type === "integer" || type === "number") {
    input = h("input", {
      id, testid, type: "number", step: type === "integer" ? "1" : "any",
      min: typeof schema.minimum === "number" ? schema.minimum : null,
      max: typeof schema.maximum === "number" ? schema.maximum : null,
    });
    read = () => {
      if (input.value === "") {
        if (required) throw new Error(`${title}: a number is needed`);
        return undefined;
      }
      const n = Number(input.value);
      if (!Number.isFinite(n) || (type === "integer" && !Number.isInteger(n))) {
        throw new Error(`${title}: not ${type === "integer" ? "an integer" : "a number"}`);
      }
      return n;
    };
  } else if (type === "string") {
    const secret = kind === "external_auth" || schema.format === "password" || /token|secret|password/i.test(name || "");
    input = h("input", {
      id, testid, type: secret ? "password" : "text", autocomplete: "off",
      maxlength: typeof schema.maxLength === "number" ? schema.maxLength : null,
    });
    read = () => (input.value === "" && !required ? undefined : input.value);
  } else {
    // objects, arrays, anything else: JSON by hand
    input = h("textarea", { id, testid, rows: 4, spellcheck: "false", placeholder: "JSON" });
    read = () => {
      if (!input.value.trim() && !required) return undefined;
      return parseJson(input.value, title);
    };
  }
  const el = h("div", { cls: type === "boolean" ? "field check" : "field" }, label, input, hint);
  return { el, name, read };
}

/** The form that answers request ``p``: a reconciliation's, or one from its schema. */
export function inputForm(p, answer) {
  const schema = p.response_schema && typeof p.response_schema === "object" ? p.response_schema : {};
  if (p.kind === "reconciliation" || Array.isArray(schema.oneOf)) return reconcileForm(p, schema, answer);
  const form = h("form", { cls: "answer", testid: "input-form", autocomplete: "off" });
  const props = schema.type === "object" && schema.properties && typeof schema.properties === "object"
    ? schema.properties
    : null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = [];
  const approval = props && props.approved && props.approved.type === "boolean";
  if (props) {
    for (const [name, sub] of Object.entries(props)) {
      if (approval && name === "approved") continue;
      fields.push(field(name, sub || {}, required.has(name), p.kind));
    }
  } else {
    fields.push(field(null, schema, true, p.kind));
  }
  fields.forEach((f) => form.append(f.el));
  const collect = () => {
    if (!props) return fields[0].read();
    const body = {};
    for (const f of fields) {
      const v = f.read();
      if (v !== undefined) body[f.name] = v;
    }
    return body;
  };
  const send = (extra, buttons) => {
    let body;
    try {
      body = { ...collect(), ...extra };
    } catch (err) {
      showError(err);
      return;
    }
    answer(p, body, buttons);
  };
  if (approval) {
    // explicit buttons only: Enter in the reason field neither approves nor denies
    const yes = h("button", { type: "button", cls: "good", testid: "approve" }, "Approve");
    const no = h("button", { type: "button", cls: "danger", testid: "deny" }, "Deny");
    form.append(h("div", { cls: "buttons" }, yes, no));
    form.addEventListener("submit", (ev) => ev.preventDefault());
    yes.addEventListener("click", () => send({ approved: true }, [yes, no]));
    no.addEventListener("click", () => send({ approved: false }, [yes, no]));
  } else {
    const submit = h("button", { type: "submit", testid: "input-submit" }, "Answer");
    form.append(h("div", { cls: "buttons" }, submit));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (!props) {
        try {
          answer(p, collect(), [submit]);
        } catch (err) {
          showError(err);
        }
        return;
      }
      send({}, [submit]);
    });
  }
  return form;
}

function reconcileForm(p, schema, answer) {
  const consts = (Array.isArray(schema.oneOf) ? schema.oneOf : [])
    .map((s) => s && s.properties && s.properties.outcome && s.properties.outcome.const)
    .filter((c) => typeof c === "string");
  const outcomes = consts.length ? consts : ["succeeded", "failed", "not_executed"];
  const outcomeSel = h("select", { id: "reconcile-outcome", testid: "reconcile-outcome" },
    outcomes.map((o) => h("option", { value: o }, o)));
  const result = h("textarea", { id: "reconcile-result", testid: "reconcile-result", rows: 4, spellcheck: "false" });
  const error = h("input", { id: "reconcile-error", testid: "reconcile-error", type: "text" });
  const resultRow = h("div", { cls: "field" }, h("label", { for: "reconcile-result" }, "Result (JSON) — what the call returned"), result);
  const errorRow = h("div", { cls: "field" }, h("label", { for: "reconcile-error" }, "Error — why it failed"), error);
  const submit = h("button", { type: "submit", testid: "reconcile-submit" }, "Record outcome");
  const sync = () => {
    resultRow.hidden = outcomeSel.value !== "succeeded";
    errorRow.hidden = outcomeSel.value !== "failed";
  };
  outcomeSel.addEventListener("change", sync);
  sync();
  const form = h("form", { cls: "answer", testid: "reconcile-form", autocomplete: "off" },
    h("p", { cls: "muted" }, "The call's outcome is unknown. Say what happened: succeeded (its result), failed (why), or not executed (it runs now, once)."),
    h("div", { cls: "field" }, h("label", { for: "reconcile-outcome" }, "Outcome"), outcomeSel),
    resultRow, errorRow, h("div", { cls: "buttons" }, submit));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { outcome: outcomeSel.value };
    try {
      if (body.outcome === "succeeded") body.result = parseJson(result.value, "result");
      if (body.outcome === "failed") body.error = error.value;
    } catch (err) {
      showError(err);
      return;
    }
    answer(p, body, [submit]);
  });
  return form;
}
