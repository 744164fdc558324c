"""The ids an experiment's turns are admitted under, derived from the experiment and
the case, so a driver that runs again admits each case once (its admission is a
replay): a case's turn is the one turn of session ``eval.<experiment>.<case>``, its
judge's the one of ``judge.<experiment>.<case>``; the turn id is the session id.

Neither an experiment id nor a case id holds a dot, so a session id names one case
(turnkeep/evaluation.py ``EXPERIMENT_ID``, turnkeep/assertions.py ``CASE_ID``). A
recovery drill arms a worker's fault points on an experiment's cases alone with
``TURNKEEP_FAULTS_SESSIONS=<prefix(experiment)>`` (runtime/obs/faults.py).
"""

from __future__ import annotations

CASE = "eval"
JUDGE = "judge"
#: a case's (or its judge's) error code when its session was deleted or expired
#: before it was scored: the case is settled, never waited on (persisted: scores hold it)
DELETED = "deleted"


def prefix(experiment_id: str, kind: str = CASE) -> str:
    """What every case session of the experiment starts with."""
    return f"{kind}.{experiment_id}."


def case_session(experiment_id: str, case_id: str) -> str:
    return prefix(experiment_id) + case_id


def judge_session(experiment_id: str, case_id: str) -> str:
    return prefix(experiment_id, JUDGE) + case_id


def parse(session_id: str) -> tuple[str, str, str] | None:
    """(kind, experiment, case) of an experiment's session; None for any other."""
    kind, _, rest = session_id.partition(".")
    experiment, _, case = rest.partition(".")
    if kind not in (CASE, JUDGE) or not experiment or not case or "." in case:
        return None
    return kind, experiment, case
