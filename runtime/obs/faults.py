"""Named fault points, off unless a test arms them through configuration.

``TURNKEEP_FAULTS="before_tool_effect=kill-once,in_lease_renewal=sleep:5"`` arms
points with actions:

``kill``        SIGKILL this process every time the point is reached
``kill-once``   SIGKILL once per point per ``TURNKEEP_FAULTS_DIR`` (a marker file)
``stop``        SIGSTOP this process (a test sends SIGCONT)
``stop-once``   SIGSTOP once, marker as for kill-once
``sleep:S``     sleep S seconds (a slow step, a stalled renewal)
``raise``       raise FaultInjected (a crash of one step, not of the process)

``TURNKEEP_FAULTS_SESSIONS=<prefix>`` narrows the armed points to work on sessions
whose id starts with the prefix (the session the thread's log ids name): a test's
victim worker then dies on the test's own turn, not on a session an earlier test
left behind that the worker's start-up scan picked up first.
"""

from __future__ import annotations

import os
import signal
import time
from enum import StrEnum
from pathlib import Path

from turnkeep.runtime.obs import logs


class FaultPoint(StrEnum):
    """Where a fault can be injected. Names are configuration: pinned in a test."""

    #: just before a model call is made
    BEFORE_MODEL_CALL = "before_model_call"
    #: the model answered; its outcome is not committed yet
    AFTER_MODEL_CALL = "after_model_call"
    #: just before a tool's function runs
    BEFORE_TOOL_EFFECT = "before_tool_effect"
    #: the tool's function returned; its result is not committed yet
    AFTER_TOOL_EFFECT = "after_tool_effect"
    #: just before a checkpoint commit is sent
    BEFORE_COMMIT = "before_commit"
    #: a checkpoint committed; its event is not published yet
    AFTER_COMMIT = "after_commit"
    #: inside the heartbeat, before a lease renewal is sent
    IN_LEASE_RENEWAL = "in_lease_renewal"
    #: the lease is held; the statement that claims the fence and starts the
    #: attempt (start_turn) is not sent yet
    BEFORE_START = "before_start"
    #: start_turn committed (fence claimed, attempt started); no step has run
    AFTER_START = "after_start"
    #: just before a settling step's fused commit (its outcome and the terminal event)
    BEFORE_SETTLE = "before_settle"
    #: a settling step committed; its events are not published and the lease is held
    AFTER_SETTLE = "after_settle"
    #: the API is about to run a cancellation (request_cancel)
    BEFORE_CANCEL = "before_cancel"
    #: the API's cancellation committed; not answered, published or enqueued yet
    AFTER_CANCEL = "after_cancel"
    #: the API is about to record the answer to an input request (resolve_input)
    BEFORE_ANSWER = "before_answer"
    #: the answer committed; not answered, published or enqueued yet
    AFTER_ANSWER = "after_answer"
    #: the API is about to admit a turn with multitask=interrupt (its transaction)
    BEFORE_INTERRUPT = "before_interrupt"
    #: the interrupting admission committed (the turn and the cancellations of the
    #: turns before it); not answered, published or enqueued yet
    AFTER_INTERRUPT = "after_interrupt"
    #: a deliverer claimed a settled turn's webhook; the POST is not sent yet
    BEFORE_DELIVERY = "before_delivery"
    #: the receiver acknowledged the POST (2xx); the delivery is not recorded yet
    AFTER_DELIVERY = "after_delivery"
    #: the delivery is recorded; a bridge thread's next reply is not claimed yet
    AFTER_DELIVERY_RECORDED = "after_delivery_recorded"
    #: a tool's ``ctx.step`` function returned; its result is not recorded yet
    BEFORE_TOOL_STEP_RECORD = "before_tool_step_record"
    #: a tool's ``ctx.step`` result is recorded (tool_steps); the step has not returned
    AFTER_TOOL_STEP_RECORD = "after_tool_step_record"
    #: the API is about to run a fork's transaction (Store.fork)
    BEFORE_FORK = "before_fork"
    #: the fork committed (the new session, its turns and events); not answered yet
    AFTER_FORK = "after_fork"
    #: a delegate call is about to admit one of its child turns (each child, in order)
    BEFORE_CHILD_ADMIT = "before_child_admit"
    #: every child of a delegate call ended and the parent resumed: the join (the
    #: call's outcome, the children's results in task order) is not committed yet
    BEFORE_JOIN = "before_join"
    #: the journal prune is about to run its statement for a session (prune_events)
    BEFORE_PRUNE = "before_prune"
    #: a session's prune statement committed (events, earliest_seq, tool steps)
    AFTER_PRUNE = "after_prune"
    #: a turn is about to commit its move to another definition (turn.definition_changed)
    BEFORE_DEFINITION_CHANGE = "before_definition_change"
    #: that move committed; the step after it is not
    AFTER_DEFINITION_CHANGE = "after_definition_change"
    #: a batch of parallel tool calls committed one outcome, and the next is not
    BETWEEN_BATCH_COMMITS = "between_batch_commits"
    #: approvals asked together: one request committed, the next not (worker/steps/tool.py)
    BETWEEN_GROUP_ASKS = "between_group_asks"
    #: the API is about to admit a rerun (its turn and reused outcomes, one transaction)
    BEFORE_RERUN = "before_rerun"
    #: the rerun committed; not answered, published or enqueued yet
    AFTER_RERUN = "after_rerun"
    #: an experiment's driver claimed cases (running); their turns are not admitted yet
    AFTER_CASE_CLAIM = "after_case_claim"
    #: a case's turn ended and its score is computed; the score is not written yet
    BEFORE_CASE_SCORE = "before_case_score"
    #: the case's score is written; the experiment has not moved on
    AFTER_CASE_SCORE = "after_case_score"
    #: a paced model call booked its rate limits' slot; neither the call is made nor
    #: its pace committed (worker/pace.py)
    AFTER_RESERVATION = "after_reservation"
    #: a call's pace (turn.paced) committed; the session is not marked paced, the lease
    #: is held and the wake not sent
    AFTER_PACE = "after_pace"
    #: a session's tombstone is about to be written (the API's DELETE, or the eraser
    #: for a session past its TTL): its transaction is not sent yet
    BEFORE_TOMBSTONE = "before_tombstone"
    #: the tombstone committed (the session is gone: reads answer 410); nothing of it
    #: is erased, nothing answered, published or enqueued yet
    AFTER_TOMBSTONE = "after_tombstone"
    #: the eraser committed one batch of a session's rows; the next is not sent
    BETWEEN_ERASE_BATCHES = "between_erase_batches"
    #: a head under max_running: the tenant's limit lock taken, nothing counted or
    #: started (store/max_running.py)
    LIMIT_LOCK_HELD = "limit_lock_held"
    #: the head started under the lock, which is not given back yet
    AFTER_LIMITED_START = "after_limited_start"
    #: a session's tombstone is there (deleted, or past its TTL); the turns that wait
    #: on it (a delegating parent, an experiment) are not told yet (worker/waiters.py)
    BEFORE_WAITERS_TOLD = "before_waiters_told"
    #: they were told; nothing of the session is erased yet
    AFTER_WAITERS_TOLD = "after_waiters_told"


#: points only the API reaches (the worker kill-point scenarios skip them)
API_POINTS = frozenset(
    {
        FaultPoint.BEFORE_CANCEL,
        FaultPoint.AFTER_CANCEL,
        FaultPoint.BEFORE_ANSWER,
        FaultPoint.AFTER_ANSWER,
        FaultPoint.BEFORE_INTERRUPT,
        FaultPoint.AFTER_INTERRUPT,
        FaultPoint.BEFORE_FORK,
        FaultPoint.AFTER_FORK,
        FaultPoint.BEFORE_RERUN,
        FaultPoint.AFTER_RERUN,
    }
)


#: points only the webhook deliverer reaches (a turn with a callback_url)
DELIVERY_POINTS = frozenset(
    {FaultPoint.BEFORE_DELIVERY, FaultPoint.AFTER_DELIVERY, FaultPoint.AFTER_DELIVERY_RECORDED}
)


#: points only a tool that uses ``ctx.step`` reaches (tests/chaos/test_tool_step_points.py)
TOOL_STEP_POINTS = frozenset(
    {FaultPoint.BEFORE_TOOL_STEP_RECORD, FaultPoint.AFTER_TOOL_STEP_RECORD}
)


#: points only a delegating agent reaches (tests/chaos/test_delegation_points.py)
DELEGATION_POINTS = frozenset({FaultPoint.BEFORE_CHILD_ADMIT, FaultPoint.BEFORE_JOIN})


#: points only the journal prune reaches (tests/chaos/test_prune_points.py)
PRUNE_POINTS = frozenset({FaultPoint.BEFORE_PRUNE, FaultPoint.AFTER_PRUNE})


#: points only an experiment's driver reaches (recovery/experiments.py,
#: tests/chaos/test_eval_points.py)
EXPERIMENT_POINTS = frozenset(
    {FaultPoint.AFTER_CASE_CLAIM, FaultPoint.BEFORE_CASE_SCORE, FaultPoint.AFTER_CASE_SCORE}
)


#: points only a session's erasure reaches (tests/chaos/test_erasure_points.py)
ERASURE_POINTS = frozenset(
    {FaultPoint.BEFORE_TOMBSTONE, FaultPoint.AFTER_TOMBSTONE, FaultPoint.BETWEEN_ERASE_BATCHES}
)


#: points only the erasure of a session another turn waits on reaches
#: (tests/chaos/test_gone_points.py)
WAITERS_POINTS = frozenset({FaultPoint.BEFORE_WAITERS_TOLD, FaultPoint.AFTER_WAITERS_TOLD})


#: points only a turn moving to another definition reaches (tests/chaos/test_deploy_points.py)
DEFINITION_POINTS = frozenset(
    {FaultPoint.BEFORE_DEFINITION_CHANGE, FaultPoint.AFTER_DEFINITION_CHANGE}
)


#: points only the calls of one model answer handled together reach: a batch of
#: parallel tool calls (tests/chaos/test_parallel_tools.py) and approvals asked in one
#: wait (tests/chaos/test_approvals_together.py)
TOGETHER_POINTS = frozenset({FaultPoint.BETWEEN_BATCH_COMMITS, FaultPoint.BETWEEN_GROUP_ASKS})


#: points only a model call under a declared rate limit reaches (tests/chaos/test_pace_points.py)
PACE_POINTS = frozenset({FaultPoint.AFTER_RESERVATION, FaultPoint.AFTER_PACE})


#: points only a head under a max_running limit reaches (tests/chaos/test_limit_points.py)
LIMIT_POINTS = frozenset({FaultPoint.LIMIT_LOCK_HELD, FaultPoint.AFTER_LIMITED_START})


class FaultInjected(Exception):
    """Raised at an armed point whose action is ``raise``. Neither an error of the tree
    nor a signal, on purpose: it stands for a crash nobody planned for, and must meet
    exactly the handling a real one would."""


def _parse(spec: str) -> dict[str, str]:
    armed: dict[str, str] = {}
    for part in spec.split(","):
        if "=" in part:
            name, action = part.split("=", 1)
            armed[name.strip()] = action.strip()
    return armed


# Read here, not through the settings: points are armed at import, before any settings
# exist, and only tests set these (a malformed setting must not stop an import).
_armed = _parse(os.environ.get("TURNKEEP_FAULTS", ""))
_dir = Path(os.environ.get("TURNKEEP_FAULTS_DIR", "/tmp/turnkeep-faults"))
_sessions = os.environ.get("TURNKEEP_FAULTS_SESSIONS", "")


def _first_time(point: str) -> bool:
    _dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(_dir / f"{point}.fired", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def hit(point: FaultPoint) -> None:
    """Reach a fault point; does nothing unless the point is armed."""
    action = _armed.get(point.value)
    if not action:
        return
    if _sessions and not str(logs.current().get("session", "")).startswith(_sessions):
        return
    if action == "kill" or (action == "kill-once" and _first_time(point.value)):
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "stop" or (action == "stop-once" and _first_time(point.value)):
        os.kill(os.getpid(), signal.SIGSTOP)
    elif action.startswith("sleep:"):
        time.sleep(float(action.split(":", 1)[1]))
    elif action == "raise":
        raise FaultInjected(point.value)


def arm(spec: str, sessions: str = "") -> None:
    """Re-read the armed points (tests of this module only)."""
    global _armed, _sessions
    _armed = _parse(spec)
    _sessions = sessions
