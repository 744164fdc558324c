"""A DBOS workflow of K no-op steps; the system database is the peer's own."""

from __future__ import annotations

from dbos import DBOS, DBOSConfig

from bench.peers._common import args, measure


@DBOS.step()
def step(i: int) -> int:
    return i + 1


@DBOS.workflow()
def job(k: int) -> int:
    n = 0
    for _ in range(k):
        n = step(n)
    return n


def main() -> None:
    a = args()
    ks = [int(k) for k in a.ks.split(",")]
    config: DBOSConfig = {"name": "peerbench", "system_database_url": a.dsn}
    DBOS(config=config)
    DBOS.launch()
    try:

        def run(k: int) -> None:
            assert job(k) == k

        measure(a.dsn, ks, a.runs, run)
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    main()
