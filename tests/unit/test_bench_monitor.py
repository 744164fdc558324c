"""The bench's Redis MONITOR counter (bench/monitor.py): client commands by name, a
product script's EVALSHA by its name, a script's own commands apart, other dbs and
Celery's worker heartbeats ignored."""

import hashlib

from bench.monitor import Monitor
from turnkeep.store import lease


def test_counts_client_commands_of_its_db_and_names_the_product_scripts() -> None:
    m = Monitor("redis://127.0.0.1:1", 13)
    grant = hashlib.sha1(lease.GRANT.encode()).hexdigest()
    for line in (
        f'1.5 [13 127.0.0.1:5000] "EVALSHA" "{grant}" "3" "k1" "k2" "k3" "o" "1" "-1"',
        '1.6 [13 lua] "GET" "k1"',
        '1.7 [13 127.0.0.1:5001] "PUBLISH" "turnkeep:events:t:s" "{\\"kind\\":\\"kind\\"}"',
        '1.8 [13 127.0.0.1:5001] "PUBLISH" "/13.celeryev/task.multi" "x"',
        '1.8 [13 127.0.0.1:5001] "PUBLISH" "/13.celeryev/worker.heartbeat" "x"',
        '1.9 [12 127.0.0.1:5002] "LPUSH" "q" "x"',
        '2.0 [13 127.0.0.1:5003] "brpop" "q" "1"',
    ):
        m._count(line)
    c = m.commands
    assert dict(c.by_name) == {"EVALSHA lease.GRANT": 1, "PUBLISH": 2, "BRPOP": 1}
    assert dict(c.in_scripts) == {"GET": 1}
    assert dict(c.published) == {"events (kind)": 1, "/13.celeryev/task.multi": 1}
    assert c.total == 4
