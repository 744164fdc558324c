"""The bench's only direct use of the Store's worker-side API (claim / start / append).

Every call the bench makes to it is in ``timed_checkpoints`` below, written against
the calls the store has had since before ``Store.turns.start`` (``claim``, ``lane_head``,
``append``), so the same bench runs on an earlier commit and before/after figures
come from one harness; the timed part is ``Store.turns.append`` alone either way.
Everything else in bench/ goes through ``Store.turns.admit`` (bench/client.py) or real
worker processes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.facade import Store
from turnkeep.store.step_commit import StepCommit

#: a model step's payload, as big as the demo agent's first model call writes
MODEL_STEP = {
    "message": {
        "role": "assistant",
        "content": "Let me look that up.",
        "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}],
    },
    "usage": {"input_tokens": 40, "output_tokens": 6},
    "model": "demo/weather",
}


def _append(store: Any, tenant_id: str, session_id: str, fence: int, **fields: Any) -> Any:
    """``Store.turns.append`` of a commit given as its fields."""
    return store.turns.append(tenant_id, session_id, fence, StepCommit(**fields))


def timed_checkpoints(
    store: Store,
    tenant_id: str,
    session_id: str,
    *,
    fence: int,
    steps: int,
    barrier: threading.Barrier | None = None,
) -> list[float]:
    """Take a pre-admitted one-turn session as a worker would under ``fence``, commit
    ``steps`` model checkpoints (``Store.turns.append``) and return the seconds each took.

    The turn is settled (``turn.completed``) at the end, so no recovery scan ever
    finds it. ``barrier``: wait there after the start, so that many threads begin
    their checkpoints at once.
    """
    # -- claim the fence, read the lane head, start it with an append (untimed) ------
    if not store.turns.claim(tenant_id, session_id, fence):
        raise RuntimeError(f"fence {fence} was not accepted for {session_id}")
    head = store.reads.lane_head(tenant_id, session_id)
    if head is None:
        raise RuntimeError(f"{session_id} has no turn to run")
    kw: dict[str, Any] = {
        "tenant_id": tenant_id,
        "session_id": session_id,
        "turn_id": head.turn_id,
        "fence": fence,
    }
    revision = _append(
        store,
        **kw,
        revision=head.revision,
        state=TurnState.RUNNING,
        type=EventType.TURN_STARTED,
        data={"attempt": head.attempt + 1},
        attempt_inc=1,
    ).revision
    # -- the checkpoints: what is timed ----------------------------------------------
    if barrier is not None:
        barrier.wait()
    seconds = []
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        revision = _append(
            store,
            **kw,
            revision=revision,
            state=TurnState.RUNNING,
            type=EventType.MODEL_COMPLETED,
            data=MODEL_STEP,
            step=step,
        ).revision
        seconds.append(time.perf_counter() - t0)
    # -- settle it ------------------------------------------------------------------------
    result = {"text": "done"}
    _append(
        store,
        **kw,
        revision=revision,
        state=TurnState.COMPLETED,
        type=EventType.TURN_COMPLETED,
        data={"result": result},
        result=result,
    )
    return seconds


def timed_turn(
    store: Store,
    tenant_id: str,
    session_id: str,
    *,
    fence: int,
    agent_hash: str,
    request: bool = False,
    seen: list[int] | None = None,
) -> float:
    """A worker's fixed cost of a one-step turn in seconds: the start statement (claim
    and context window), the model's transcript built from it, and the fused settling
    step (the final ``model.completed`` with ``turn.completed``). The model call itself
    is not in it: it costs the same in any session.

    ``request``: also what worker/steps/model.py does per call before the provider
    sees it: the turn's input decoded (``TurnInput``), the ``ModelRequest`` built,
    its tokens estimated against the budget (runtime/window.py ``request_tokens``)
    and every message encoded as a provider would send it (``Message.to_json``; what
    ``_before_call`` does for request processors). Not the agent's own processors,
    memory recall or the provider's wire encoding. ``seen``: the transcript's length
    is appended to it."""
    from turnkeep.runtime import plan, window
    from turnkeep.runtime.admission import TurnInput
    from turnkeep.runtime.messages import ModelRequest

    t0 = time.perf_counter()
    started = store.turns.start(
        tenant_id, session_id, fence, claim=True, agent_hashes=[agent_hash], max_attempts=3
    )
    turn = started.turn
    if turn is None:
        raise RuntimeError(f"{session_id} has no turn to start")
    if request:
        given = TurnInput.from_json(turn.input).messages
        # the prior's messages decoded once, kept with the window (store/context_cache.py)
        messages = plan.transcript(given, started.events, started.prior, decoded=started.decoded)
        req = ModelRequest(model="demo/weather", instructions="", messages=tuple(messages))
        window.request_tokens(req)
        [m.to_json() for m in req.messages]
    else:
        messages = plan.transcript(
            turn.input["messages"], started.events, started.prior, decoded=started.decoded
        )
    if seen is not None:
        seen.append(len(messages))
    result = {"text": "done"}
    store.turns.append(
        tenant_id,
        session_id,
        fence,
        StepCommit(
            turn_id=turn.turn_id,
            revision=turn.revision,
            state=TurnState.COMPLETED,
            type=EventType.MODEL_COMPLETED,
            data={"message": {"role": "assistant", "content": "done"}, "usage": {}},
            step=1,
            then=(EventType.TURN_COMPLETED, {"result": result}),
            result=result,
        ),
    )
    return time.perf_counter() - t0
