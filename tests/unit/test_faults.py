from __future__ import annotations

import pytest

from runtime import faults


def test_unarmed_points_do_nothing_and_raise_action_raises():
    faults.arm("")
    faults.hit(faults.FaultPoint.BEFORE_COMMIT)
    faults.arm("before_commit=raise, after_commit=sleep:0")
    with pytest.raises(faults.FaultInjected):
        faults.hit(faults.FaultPoint.BEFORE_COMMIT)
    faults.hit(faults.FaultPoint.AFTER_COMMIT)
    faults.arm("")
