// The turnkeep console's entry module (api/console.py, docs/console.md): the token
// form, sign-out, and the views addressed by the URL's fragment (sessions, a session,
// a turn, #/search, #/inbox, #/schedules, #/experiments and #/limits).
//
// Every datum comes from the JSON API under the token the person gives; it is
// untrusted and rendered with textContent only, never as HTML. No inline script,
// no third-party code: the page's Content-Security-Policy allows neither. The
// modules are loaded by the browser as they are (no build step); states.js is
// written by the server from its state machine.

import { api, forgetToken, keepToken, onUnauthorized, token } from "./api.js";
import { $, main } from "./dom.js";
import { clearError, showError } from "./errors.js";
import { compareView, experimentView, experimentsView } from "./evaluation.js";
import { schedulesView } from "./schedules.js";
import { inboxView } from "./inbox.js";
import { limitsView } from "./limits.js";
import { searchView } from "./search.js";
import { sessionView } from "./session.js";
import { sessionsView } from "./sessions.js";
import { turnView } from "./turn.js";
import { crumbs, leaveView } from "./views.js";

const ID = /^[A-Za-z0-9._-]{1,128}$/;
// an experiment's id (turnkeep/evaluation.py EXPERIMENT_ID)
const EXPERIMENT = /^[A-Za-z0-9_-]{1,64}$/;

function showLogin(message) {
  leaveView();
  main.replaceChildren();
  crumbs();
  $("sign-out").hidden = true;
  $("nav").hidden = true;
  $("login").hidden = false;
  if (message) showError(message);
  $("token-input").focus();
}

function signOut(reason) {
  forgetToken();
  showLogin(reason);
}

onUnauthorized(signOut);

$("sign-out").addEventListener("click", () => {
  clearError();
  // what was open belongs to the token just forgotten: the next one starts afresh
  history.replaceState(null, "", "#/sessions");
  signOut(null);
});

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const value = $("token-input").value.trim();
  if (!value) return;
  clearError();
  keepToken(value);
  $("token-input").value = "";
  try {
    await api("GET", "/v1/sessions?limit=1");
  } catch (err) {
    if (err.status !== 401) {
      forgetToken();
      showLogin(err);
    }
    return;
  }
  route();
});

function route() {
  leaveView();
  if (!token()) {
    showLogin(null);
    return;
  }
  $("login").hidden = true;
  $("sign-out").hidden = false;
  $("nav").hidden = false;
  let parts;
  // #/search?… and #/inbox carry a query after the path (search.js)
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?", 2);
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    parts = [];
  }
  main.replaceChildren();
  // the header's link of the page shown (sessions for a session's and a turn's)
  for (const link of document.querySelectorAll(".nav a")) {
    const here = link.getAttribute("href").slice(2) === (parts[0] || "sessions");
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (parts[0] === "search" && parts.length === 1) {
    searchView(new URLSearchParams(query || ""));
  } else if (parts[0] === "inbox" && parts.length === 1) {
    inboxView();
  } else if (parts[0] === "sessions" && parts.length === 2 && ID.test(parts[1])) {
    sessionView(parts[1]);
  } else if (
    parts[0] === "sessions" && parts.length === 4 && parts[2] === "turns" &&
    ID.test(parts[1]) && ID.test(parts[3])
  ) {
    turnView(parts[1], parts[3]);
  } else if (parts[0] === "experiments" && parts.length === 1) {
    experimentsView();
  } else if (parts[0] === "experiments" && parts.length === 2 && EXPERIMENT.test(parts[1])) {
    experimentView(parts[1]);
  } else if (
    parts[0] === "experiments" && parts.length === 4 && parts[2] === "compare" &&
    EXPERIMENT.test(parts[1]) && EXPERIMENT.test(parts[3])
  ) {
    compareView(parts[1], parts[3]);
  } else if (parts[0] === "schedules" && parts.length === 1) {
    schedulesView();
  } else if (parts[0] === "limits" && parts.length === 1) {
    limitsView();
  } else {
    sessionsView();
  }
}

window.addEventListener("hashchange", () => {
  clearError();
  route();
});

route();
