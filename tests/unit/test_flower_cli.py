"""``turnkeep flower``'s configuration: basic auth or a refusal, loopback by default."""

from __future__ import annotations

import pytest

from turnkeep.cli import flower_env, process


def test_basic_auth_goes_to_flower_in_its_environment_and_it_binds_loopback():
    args, env = flower_env(["--port=5555"], {"TURNKEEP_FLOWER_BASIC_AUTH": "ops:pw, b:x:y"})
    assert args == ["--address=127.0.0.1", "--port=5555"]
    assert env["FLOWER_BASIC_AUTH"] == "ops:pw,b:x:y"  # a password may hold a colon
    assert not any("pw" in a for a in args)


def test_without_authentication_it_refuses(capsys):
    with pytest.raises(SystemExit) as exc:
        flower_env([], {})
    assert exc.value.code == 2 and "without authentication" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["ops", "ops:", ":pw", "ops:pw,"])
def test_a_malformed_credential_is_refused(value):
    with pytest.raises(SystemExit) as exc:
        flower_env([], {"TURNKEEP_FLOWER_BASIC_AUTH": value})
    assert exc.value.code == 2


def test_running_open_or_elsewhere_takes_saying_so():
    args, env = flower_env([], {"TURNKEEP_FLOWER_UNSAFE_NOAUTH": "1"})
    assert args == ["--address=127.0.0.1"] and "FLOWER_BASIC_AUTH" not in env
    # flower's own authentication options count as authentication
    assert flower_env(["--auth=.*@example\\.com"], {})[0][1:] == ["--auth=.*@example\\.com"]
    args, _ = flower_env(
        ["--address=10.0.0.5"],
        {"TURNKEEP_FLOWER_BASIC_AUTH": "a:b", "TURNKEEP_FLOWER_ADDRESS": "0.0.0.0"},
    )
    assert args == ["--address=0.0.0.0", "--address=10.0.0.5"]  # the last one wins


def test_turnkeep_flower_runs_flower_with_those_arguments_and_environment():
    argv, env = process("flower", ["--port=5555"], {"TURNKEEP_FLOWER_BASIC_AUTH": "ops:pw"})
    assert argv[-4:] == ["turnkeep.worker.app", "flower", "--address=127.0.0.1", "--port=5555"]
    assert env["FLOWER_BASIC_AUTH"] == "ops:pw" and not any("pw" in a for a in argv)
    with pytest.raises(SystemExit) as exc:
        process("flower", [], {})
    assert exc.value.code == 2
