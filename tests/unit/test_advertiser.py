"""worker/advertiser.py's following of the definition queues: consumed only while a
message waits, let go after IDLE_ROUNDS empty looks, none while Postgres is out of
reach, and all along on a broker whose depths cannot be read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from turnkeep.runtime.settings import Settings
from turnkeep.store.fleet import definition_queue
from turnkeep.worker.advertiser import IDLE_ROUNDS, Advertiser


class Control:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, list[str]]] = []

    def add_consumer(self, queue: str, destination: list[str], reply: bool) -> None:
        self.calls.append(("add", queue, destination))

    def cancel_consumer(self, queue: str, destination: list[str], reply: bool) -> None:
        self.calls.append(("cancel", queue, destination))


def advertiser(depths: dict[str, int] | None) -> tuple[Advertiser, Control, Any]:
    state = SimpleNamespace(depths=depths, reachable=True)
    ctx = SimpleNamespace(
        redis=None,
        owner_prefix="h:1:ab",
        settings=Settings(broker={"queue": "q"}, lease={"ttl": 3.0}),
        agents=SimpleNamespace(hashes=["a" * 64, "b" * 64]),
        producer=SimpleNamespace(queue_depths=lambda queues: state.depths),
        reaches_postgres=lambda: state.reachable,
    )
    control = Control()
    adv = Advertiser(ctx, SimpleNamespace(control=control), "w1@h")  # type: ignore[arg-type]
    return adv, control, state


QA, QB = definition_queue("q", "a" * 64), definition_queue("q", "b" * 64)


def test_a_queue_is_consumed_while_messages_wait_and_let_go_when_idle() -> None:
    adv, control, state = advertiser({QA: 0, QB: 0})
    adv.follow()
    assert control.calls == []  # nothing waits: the main queue only
    state.depths = {QA: 2, QB: 0}
    adv.follow()
    assert control.calls == [("add", QA, ["w1@h"])]
    state.depths = {QA: 0, QB: 0}
    for _ in range(IDLE_ROUNDS - 1):
        adv.follow()
    assert control.calls == [("add", QA, ["w1@h"])]
    adv.follow()
    assert control.calls[-1] == ("cancel", QA, ["w1@h"]) and adv.consuming == {}


def test_cut_off_from_postgres_it_consumes_none_and_an_unreadable_broker_all() -> None:
    adv, control, state = advertiser({QA: 1, QB: 0})
    state.reachable = False
    adv.follow()
    assert control.calls == []
    state.reachable = True
    adv.follow()
    state.reachable = False
    adv.follow()
    assert [c[0] for c in control.calls] == ["add", "cancel"]
    adv, control, _ = advertiser(None)  # not Redis: depths unknown
    adv.follow()
    assert sorted(c[1] for c in control.calls if c[0] == "add") == sorted([QA, QB])
