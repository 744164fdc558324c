"""A client-only install (``pip install turnkeep``, without turnkeep-server): the
commands that run part of the service say what to install instead of failing on an
import. deploy/wheel_check.sh checks the same in a real client-only virtualenv."""

from __future__ import annotations

import pytest

from turnkeep import cli
from turnkeep.cli import server_extra


@pytest.fixture
def client_only(monkeypatch):
    """As if one of the server extra's modules were not installed."""
    monkeypatch.setattr(server_extra, "SERVER_MODULES", ("celery", "turnkeep_no_such_module"))


@pytest.mark.parametrize(
    "argv",
    [
        ["dev", "--migrate-only"],
        ["api", "--port", "1"],
        ["worker"],
        ["beat"],
        ["flower"],
        ["migrate"],
        ["tokens", "new", "--tenant", "t", "--subject", "s"],
        ["tokens", "list"],
    ],
)
def test_a_server_command_names_the_extra_and_exits_2(client_only, capsys, argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"turnkeep {' '.join(argv[:2] if argv[0] == 'tokens' else argv[:1])} needs" in err
    assert "(turnkeep_no_such_module not installed)" in err
    assert "pip install turnkeep-server" in err


def test_client_commands_do_not_ask_for_the_server(client_only, capsys, monkeypatch):
    monkeypatch.delenv("TURNKEEP_URL", raising=False)
    # an address nothing listens on: the client runs, and reports the API unreachable
    code = cli.main(["sessions", "--url", "http://127.0.0.1:9", "--token", "t"])
    assert code == cli.EXIT_UNREACHABLE
    assert "server extra" not in capsys.readouterr().err


def test_with_the_server_installed_nothing_is_refused():
    for command in ("turnkeep dev", "turnkeep api"):
        cli.needs_server(command)  # the dev venv has the server extra: returns


def test_redis_py_parses_replies_with_hiredis():
    """The server extra brings hiredis, and redis-py picks its C parser (issue 39)."""
    import redis
    from redis.utils import HIREDIS_AVAILABLE

    assert HIREDIS_AVAILABLE
    conn = redis.Redis(host="127.0.0.1", port=1).connection_pool.make_connection()
    assert type(conn._parser).__name__ == "_HiredisParser"
