// The evaluation plane (docs/evaluation.md): #/experiments (the tenant's experiments,
// two picked to compare), #/experiments/{id} (one experiment's figures and cases) and
// #/experiments/{a}/compare/{b} (side by side, case by case). Read-only: the API's
// experiments are made over HTTP, the CLI or the client.

import { api } from "./api.js";
import { emptyRow, enc, facts, h, main, row, table, turnHref } from "./dom.js";
import { showError } from "./errors.js";
import { fmtCost, fmtMs, fmtTime } from "./format.js";
import { crumbs, lifetime } from "./views.js";

const LIST = "#/experiments";
const experimentHref = (id) => LIST + "/" + enc(id);
const compareHref = (a, b) => experimentHref(a) + "/compare/" + enc(b);

function rate(value) {
  return typeof value === "number" ? `${Math.round(value * 100)}%` : "—";
}

/** A case's or an assertion's result: pass, fail, or not yet. */
function verdict(passed, testid) {
  if (passed === null || passed === undefined) {
    return h("span", { cls: "state state-queued", testid, "data-passed": "none" }, "—");
  }
  const cls = passed ? "state state-completed" : "state state-failed";
  return h("span", { cls, testid, "data-passed": String(passed) }, passed ? "pass" : "fail");
}

function label(e) {
  return `${e.agent} v${e.agent_version} on ${e.dataset} v${e.dataset_version}`;
}

export function experimentsView() {
  crumbs({ text: "Sessions", href: "#/sessions" }, { text: "Experiments" });
  const { el, body } = table("experiments", ["Experiment", "Agent", "Dataset", "State", "Pass rate", "Cost", "Created"]);
  const pickA = h("select", { testid: "compare-a", "aria-label": "Baseline" });
  const pickB = h("select", { testid: "compare-b", "aria-label": "Compared" });
  const go = h("button", { type: "button", testid: "compare-go" }, "Compare");
  main.append(
    h("section", { testid: "experiments-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Experiments"), h("span", { cls: "muted" }, "newest first")),
      el,
      h("div", { cls: "pager" }, "Compare ", pickA, " with ", pickB, " ", go)),
  );
  const gone = lifetime();
  go.addEventListener("click", () => {
    if (pickA.value && pickB.value) location.hash = compareHref(pickA.value, pickB.value);
  });
  (async () => {
    const found = await api("GET", "/v1/experiments?limit=100");
    if (gone()) return;
    for (const e of found.experiments) {
      body.append(
        row(
          [
            h("a", { href: experimentHref(e.experiment_id), testid: "experiment-link" }, e.experiment_id),
            `${e.agent} v${e.agent_version}`,
            `${e.dataset} v${e.dataset_version}`,
            // (an experiment's states are named as a turn's: the same badges)
            h("span", { cls: "state state-" + e.state, testid: "experiment-state" }, e.state),
            rate(e.summary.pass_rate),
            fmtCost(e.summary.cost_usd),
            fmtTime(e.created_at),
          ],
          { testid: "experiment-row", "data-experiment-id": e.experiment_id },
        ),
      );
      for (const pick of [pickA, pickB]) {
        pick.append(h("option", { value: e.experiment_id }, `${e.experiment_id} (${label(e)})`));
      }
    }
    if (found.experiments.length === 0) emptyRow(body, 7, "No experiments yet.");
    if (found.experiments.length > 1) pickA.selectedIndex = 1;
    el.dataset.loaded = "true";
  })().catch(showError);
}

function failed(result) {
  const parts = result.assertions.filter((a) => !a.passed).map((a) => `${a.kind}: ${a.detail}`);
  return parts.length ? parts.join("; ") : "—";
}

function judged(judge) {
  if (!judge) return "—";
  const score = typeof judge.score === "number" ? ` ${judge.score.toFixed(2)}` : "";
  return (judge.verdict || judge.state) + score;
}

export function experimentView(id) {
  crumbs({ text: "Experiments", href: LIST }, { text: id });
  const summary = h("dl", { cls: "facts", testid: "experiment-summary" });
  const { el, body } = table("cases", ["Case", "Result", "Turn", "Steps", "Latency", "Failed assertions", "Judge"]);
  main.append(
    h("section", { testid: "experiment-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Experiment ", h("code", {}, id))),
      summary,
      h("h2", {}, "Cases"),
      el),
  );
  const gone = lifetime();
  (async () => {
    const e = await api("GET", `/v1/experiments/${enc(id)}`);
    if (gone()) return;
    const s = e.summary;
    summary.replaceChildren(
      ...facts([
        ["Ran", label(e)],
        ["State", e.state],
        ["Pass rate", h("span", { testid: "pass-rate" }, rate(s.pass_rate))],
        ["Passed / failed", `${s.passed} / ${s.failed} of ${s.cases}`],
        ["None-of clean", s.none_of_clean === null ? "—" : s.none_of_clean ? "yes" : "no"],
        ["Cost", fmtCost(s.cost_usd)],
        ["Tokens", String(s.tokens)],
        ["Mean latency", s.latency_ms_mean === null ? "—" : fmtMs(Math.round(s.latency_ms_mean))],
        ["Judge", s.judged ? `mean ${s.judge_mean.toFixed(2)}, cost ${fmtCost(s.judge_cost_usd)}` : "—"],
      ]),
    );
    for (const r of e.results) {
      const turn = r.error_code ? `${r.turn_state || r.state} (${r.error_code})` : r.turn_state || r.state;
      body.append(
        row(
          [
            r.case_id,
            verdict(r.passed, "case-result"),
            h("a", { href: turnHref(r.session_id, r.turn_id) }, turn),
            String(r.steps),
            fmtMs(r.latency_ms),
            failed(r),
            judged(r.judge),
          ],
          { testid: "case-row", "data-case-id": r.case_id },
        ),
      );
    }
    el.dataset.loaded = "true";
  })().catch(showError);
}

export function compareView(a, b) {
  crumbs({ text: "Experiments", href: LIST }, { text: `${a} vs ${b}` });
  const summary = h("dl", { cls: "facts", testid: "comparison-summary" });
  const { el, body } = table("comparison", ["Case", "A", "B", "Change", "Assertions that moved", "Judge A", "Judge B"]);
  main.append(
    h("section", { testid: "compare-view" },
      h("div", { cls: "heading" }, h("h1", {}, "Side by side")),
      summary,
      el),
  );
  const gone = lifetime();
  (async () => {
    const c = await api("GET", `/v1/experiments/${enc(a)}/compare/${enc(b)}`);
    if (gone()) return;
    const delta = typeof c.pass_rate_delta === "number" ? `${c.pass_rate_delta >= 0 ? "+" : ""}${Math.round(c.pass_rate_delta * 100)} points` : "—";
    summary.replaceChildren(
      ...facts([
        ["A", h("a", { href: experimentHref(c.a.experiment_id) }, label(c.a))],
        ["B", h("a", { href: experimentHref(c.b.experiment_id) }, label(c.b))],
        ["Pass rate", h("span", { testid: "rates" }, `${rate(c.a.summary.pass_rate)} → ${rate(c.b.summary.pass_rate)} (${delta})`)],
        ["Fixed / regressed", h("span", { testid: "changes" }, `${c.fixed} fixed, ${c.regressed} regressed`)],
        ["Cost", `${fmtCost(c.a.summary.cost_usd)} → ${fmtCost(c.b.summary.cost_usd)}`],
      ]),
    );
    for (const x of c.cases) {
      const moved = x.assertions.map((m) => `#${m.index} ${m.kind}: ${m.a ? "pass" : "fail"} → ${m.b ? "pass" : "fail"}`);
      const cls = x.change === "fixed" ? "state state-completed" : x.change === "regressed" ? "state state-failed" : "muted";
      body.append(
        row(
          [
            x.case_id,
            verdict(x.a, "case-a"),
            verdict(x.b, "case-b"),
            h("span", { cls, testid: "case-change", "data-change": x.change }, x.change),
            moved.join("; ") || "—",
            typeof x.judge_a === "number" ? x.judge_a.toFixed(2) : "—",
            typeof x.judge_b === "number" ? x.judge_b.toFixed(2) : "—",
          ],
          { testid: "comparison-row", "data-case-id": x.case_id },
        ),
      );
    }
    if (c.cases.length === 0) emptyRow(body, 7, "No cases.");
    el.dataset.loaded = "true";
  })().catch(showError);
}
