// The JSON API under the person's token: fetch with the bearer header, problems as
// ApiError. The token lives in the tab's sessionStorage and only ever goes in the
// Authorization header of this API's calls, never in a URL.

export const ROOT = document.body.dataset.root || "";
const TOKEN_KEY = "turnkeep.console.token";
// rows a listing asks for at a time
export const PAGE = 25;

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const keepToken = (value) => sessionStorage.setItem(TOKEN_KEY, value);
export const forgetToken = () => sessionStorage.removeItem(TOKEN_KEY);

/** A problem the API answered (or a network failure, as ``network_error``). */
export class ApiError extends Error {
  constructor(status, body) {
    const problem = body && typeof body === "object" ? body : {};
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.code = typeof problem.code === "string" ? problem.code : `http_${status}`;
    this.detail = typeof problem.detail === "string" ? problem.detail : "";
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    // the problem's own members (a deleted session's deleted_at and erased_at)
    this.problem = problem;
  }
}

// what a 401 does (the page's sign-out, set by console.js), so this module needs no view
let unauthorized = () => {};

export function onUnauthorized(fn) {
  unauthorized = fn;
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json", Authorization: "Bearer " + (token() || "") };
  const init = { method, headers, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(ROOT + path, init);
  } catch (e) {
    throw new ApiError(0, { code: "network_error", detail: "the API did not answer" });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const err = new ApiError(response.status, data);
    if (response.status === 401) unauthorized(err);
    throw err;
  }
  return data;
}
