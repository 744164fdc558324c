"""Parallel tool calls (issue 25): a turn whose one model answer asks for
``FANOUT`` (4) read calls of ``PAUSE`` (0.5) s each, one turn at a time on a real
worker, admit -> terminal; then the same turn of an agent that runs one call at a
time (``max_parallel_tools=1``), each phase on a worker of its own.

``parallel_turn_ratio`` is the parallel turn's p50 over the sequential one's (the
calls side by side: a little over 1 / FANOUT); ``parallel_xacts_per_step`` and
``sequential_xacts_per_step`` the worker's transactions per durable step of each
phase's turns (1 + FANOUT + 1 steps), which running side by side must not raise.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench.agents import FANOUT, PAUSE
from bench.context import Run
from bench.harness import server_transactions, settled_stats


def _phase(r: Run, agent_name: str, runs: int) -> tuple[float, float]:
    """(turn p50 s, worker transactions per step) of ``runs`` turns, after a warm-up."""
    from turnkeep.runtime.agents.registry import load_agents

    h = load_agents("bench.agents").get(agent_name).definition_hash
    r.c.disconnect()
    before = settled_stats(r.env.dbname, quiet=0.5)
    polls0 = r.c.polls
    w, _ = r.start_turn_worker(
        concurrency=4, latency=0.0, name=agent_name, TURNKEEP_AGENTS="bench.agents"
    )
    t = r.tenant(agent_name)
    took: list[float] = []
    try:
        for i in range(runs + 1):
            t0 = time.perf_counter()
            session = r.admit_turn(t, agent_name, h, "fan out")
            if not r.c.wait_turn(t, session):
                raise RuntimeError(f"a {agent_name} turn did not finish in 30 s")
            if i:  # the first is a warm-up
                took.append(time.perf_counter() - t0)
    finally:
        r.env.stop(w)  # its backends exit, and flush their counts
    polls = r.c.polls - polls0
    r.c.disconnect()
    xacts = server_transactions(settled_stats(r.env.dbname, quiet=0.5)) - server_transactions(
        before
    )
    turns = runs + 1
    # the worker's start-up included; less the bench's polls and admissions
    return statistics.median(took), (xacts - polls - turns) / (turns * (FANOUT + 2))


def run(r: Run) -> dict[str, Any]:
    runs = 4 if r.plan.quick else 10
    par, par_x = _phase(r, "fanout", runs)
    seq, seq_x = _phase(r, "fanout-seq", runs)
    r.figures["parallel_turn_p50_s"] = par
    r.figures["sequential_turn_p50_s"] = seq
    r.figures["parallel_xacts_per_step"] = par_x
    r.figures["sequential_xacts_per_step"] = seq_x
    return {"runs": runs, "calls": FANOUT, "pause_s": PAUSE}
