"""Opt-in per-piece timings of an admission, for the bench (bench/scenarios/admission.py).

With ``TURNKEEP_BENCH_TIMINGS=1`` in the API's environment (read once, at import) an
admission's answer carries a ``Server-Timing`` header, each piece's ``perf_counter``
duration in ms: ``auth`` (the Authenticate middleware), ``parse`` (from auth's end to
the route: routing, body read, JSON and pydantic validation), ``checks`` (role, agent,
bounds), ``hash`` (the input's identity hash and JSON), ``statement`` (``Store.turns.admit``),
``thread`` (the hop to the blocking pool and back, less the service's work),
``response`` (the answer's JSON) and ``enqueue`` (the previous admission's
after-answer publish and enqueue: it runs once the answer went out). Off by default:
the header and the clocks cost nothing then but one test of ``ENABLED``.
"""

from __future__ import annotations

import os
import time

# Read here, not through the settings: the bench's switch, read once at import.
ENABLED = os.environ.get("TURNKEEP_BENCH_TIMINGS") == "1"

#: the last after-answer's duration (s), reported by the next admission's header
last_enqueue: list[float] = [0.0]

now = time.perf_counter


def header(parts: dict[str, float]) -> str:
    """``Server-Timing`` of ``parts`` (seconds; names starting with ``_`` are skipped)."""
    return ", ".join(
        f"{name};dur={1000.0 * dur:.4f}" for name, dur in parts.items() if name[0] != "_"
    )


def parse(value: str) -> dict[str, float]:
    """The pieces (ms) of a ``Server-Timing`` header made by ``header``."""
    out: dict[str, float] = {}
    for item in value.split(","):
        name, _, dur = item.strip().partition(";dur=")
        if name and dur:
            out[name] = float(dur)
    return out
