"""A private Postgres cluster for scenarios that stop, restart or cut the server.

``initdb`` into a fresh directory (as the ``postgres`` OS user when we are root:
initdb refuses root), trust auth, TCP only, on a free port, listening on 127.0.0.1
and any extra addresses (a network namespace's veth). The machine's shared
Postgres is never touched.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from tests.procs import PORT_TAKEN, PortTaken, on_free_port, wait_for
from turnkeep.embedded import server_user, which_postgres_bin

#: the machine's Postgres 15 server, else the turnkeep[embedded] wheel's (issue 15)
BIN = which_postgres_bin(Path("/usr/lib/postgresql/15/bin"))
DBNAME = "turnkeep"


def _as_postgres(argv: list[str]) -> list[str]:
    user = server_user()
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


class PgCluster:
    """One throwaway cluster; ``url`` is what turnkeep processes are given."""

    def __init__(self, *, listen: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.port = 0
        self.listen = listen
        self.dir = Path(tempfile.mkdtemp(prefix="turnkeep-pg-"))
        self.data = self.dir / "data"
        self.logfile = self.dir / "postgres.log"
        if os.geteuid() == 0:
            pw = pwd.getpwnam(server_user() or "postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self._run(
            [
                str(BIN / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '{','.join(listen)}'\n"
                "unix_socket_directories = ''\n"
                "max_connections = 300\n"
                "shared_buffers = 32MB\n"
                # a throwaway cluster: nothing here must survive a machine crash
                "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
            )
        with (self.data / "pg_hba.conf").open("w") as hba:
            hba.write("host all all 0.0.0.0/0 trust\n")
        self.port = on_free_port(self._first_start)
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{DBNAME}"')

    def _first_start(self, port: int) -> int:
        """Start on ``port`` (the last ``port =`` line of the config wins); PortTaken
        when another process took it since it was found free."""
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {port}\n")
        self.port = port
        try:
            self.start()
        except subprocess.CalledProcessError:
            if any(s in self.log().lower() for s in PORT_TAKEN):
                raise PortTaken(self.log()) from None
            raise
        return port

    def _run(self, argv: list[str]) -> None:
        subprocess.run(_as_postgres(argv), check=True, capture_output=True, timeout=120)

    def admin_url(self, host: str = "127.0.0.1") -> str:
        return f"postgresql://postgres@{host}:{self.port}/postgres"

    def url(self, host: str = "127.0.0.1", port: int | None = None) -> str:
        """The SQLAlchemy URL of the turnkeep database (via ``host``:``port``)."""
        return f"postgresql+psycopg://postgres@{host}:{port or self.port}/{DBNAME}"

    def migrate(self) -> None:
        """Migrate to head and create the test agents' effect tables."""
        from tests.agents import SCHEMA
        from turnkeep.store.migrate import upgrade

        upgrade(self.url())
        with psycopg.connect(self.url().replace("+psycopg", ""), autocommit=True) as conn:
            conn.execute(SCHEMA)

    def start(self) -> None:
        self._run(
            [
                str(BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.logfile),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        wait_for(self.ready, 30, what="private postgres accepting connections")

    def stop(self, mode: str = "fast") -> None:
        self._run([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"])

    def ready(self) -> bool:
        try:
            with psycopg.connect(self.admin_url(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def destroy(self) -> None:
        if self.running():
            with contextlib.suppress(subprocess.SubprocessError):
                self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
