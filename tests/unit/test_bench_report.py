"""The bench's issue-23 ratios and goals (bench/report.py)."""

from bench import report


def test_inflight_and_chat_ratios_and_goals() -> None:
    f = report.with_ratios(
        {
            "inflight_c256_total_s": 3.0,
            "inflight_c256_ideal_s": 2.0,
            "inflight_c256_worker_cores": 0.5,
            "chat_turn_p50_ms": 90.0,
            "chat_fresh_p50_ms": 30.0,
        }
    )
    assert f["inflight_c256_ratio"] == 1.5
    assert f["chat_window_turn_ratio"] == 3.0
    assert "inflight_c64_ratio" not in f  # a ratio needs both its figures
    for key in ("inflight_c256_ratio", "chat_window_turn_ratio", "inflight_c256_worker_cores"):
        assert report.GOALS[key][1](f[key])
    assert not report.GOALS["inflight_c256_worker_cores"][1](1.0)
    assert not report.GOALS["chat_window_turn_ratio"][1](3.1)
