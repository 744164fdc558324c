from __future__ import annotations

import pytest

from turnkeep.runtime.obs import faults, logs


def test_unarmed_points_do_nothing_and_raise_action_raises():
    faults.arm("")
    faults.hit(faults.FaultPoint.BEFORE_COMMIT)
    faults.arm("before_commit=raise, after_commit=sleep:0")
    with pytest.raises(faults.FaultInjected):
        faults.hit(faults.FaultPoint.BEFORE_COMMIT)
    faults.hit(faults.FaultPoint.AFTER_COMMIT)
    faults.arm("")


def test_points_narrowed_to_sessions_fire_only_on_those():
    faults.arm("before_commit=raise", sessions="s-take-")
    try:
        faults.hit(faults.FaultPoint.BEFORE_COMMIT)  # no session bound: not ours
        with logs.bound(session="s-other-1"):
            faults.hit(faults.FaultPoint.BEFORE_COMMIT)
        with logs.bound(session="s-take-1"), pytest.raises(faults.FaultInjected):
            faults.hit(faults.FaultPoint.BEFORE_COMMIT)
    finally:
        faults.arm("")
