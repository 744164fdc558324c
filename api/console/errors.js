// The page's one error box: a problem's code and detail (and where, for a
// validation_error), or a local error's message.

import { ApiError } from "./api.js";
import { $ } from "./dom.js";

export function showError(err) {
  const box = $("error");
  const text = $("error-text");
  if (err instanceof ApiError) {
    const where = err.errors
      .map((e) => `${Array.isArray(e.loc) ? e.loc.join(".") : ""}: ${e.msg ?? ""}`)
      .join("; ");
    text.textContent = `${err.code}: ${err.detail}` + (where ? ` (${where})` : "");
  } else {
    text.textContent = `error: ${err && err.message ? err.message : String(err)}`;
  }
  box.hidden = false;
}

export function clearError() {
  $("error").hidden = true;
  $("error-text").textContent = "";
}

$("error-close").addEventListener("click", clearError);
