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


def test_peer_step_ratio_and_redis_commands_goal() -> None:
    f = report.with_ratios(
        {"turnkeep_step_ms": 0.9, "peer_langgraph_step_ms": 1.5, "redis_commands_per_turn": 10}
    )
    assert abs(f["peer_step_ratio"] - 0.6) < 1e-9
    assert report.GOALS["peer_step_ratio"][1](f["peer_step_ratio"])
    assert not report.GOALS["peer_step_ratio"][1](0.61)
    assert report.GOALS["redis_commands_per_turn"][1](f["redis_commands_per_turn"])
    assert not report.GOALS["redis_commands_per_turn"][1](10.5)
    labels = dict(report.FIGURES)
    for key in ("redis_commands_per_turn", "turnkeep_step_ms", "peer_langgraph_step_ms"):
        assert key in labels
