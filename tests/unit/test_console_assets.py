"""The console's ES modules (api/console/, served by api/console.py): every module an
import names is served, and publicly; the turn's states and the journal's event
types reach the page from runtime/states.py (``states.js``), never as a hand copy."""

from __future__ import annotations

import json
import re
from importlib import resources

from turnkeep.api.auth import CONSOLE_PATHS
from turnkeep.api.console import ASSETS, shell, states_module
from turnkeep.api.service.wire import IDLE
from turnkeep.runtime.states import TERMINAL_EVENTS, TERMINAL_STATES, EventType, TurnState

_IMPORT = re.compile(r'^import\s[^;]*?\sfrom\s"\./([^"]+)";', re.MULTILINE | re.DOTALL)
_EXPORT = re.compile(r"^export const (\w+) = Object\.freeze\((.*)\);$", re.MULTILINE)


def _modules() -> dict[str, str]:
    return {n: a.body.decode("utf-8") for n, a in ASSETS.items() if n.endswith(".js")}


def test_states_js_is_the_state_machine_of_the_server() -> None:
    exported = {k: json.loads(v) for k, v in _EXPORT.findall(states_module().decode())}
    assert exported == {
        "SESSION_STATES": [IDLE, *(s.value for s in TurnState)],
        "TURN_STATES": [s.value for s in TurnState],
        "TERMINAL_STATES": [s.value for s in TurnState if s in TERMINAL_STATES],
        "EVENT_TYPES": [e.value for e in EventType],
        "TERMINAL_EVENTS": [e.value for e in TERMINAL_EVENTS.values()],
    }
    assert ASSETS["states.js"].body == states_module()
    # generated, never a file a person could edit out of step
    assert not (resources.files("api") / "console" / "states.js").is_file()


def test_no_module_hand_copies_a_state() -> None:
    modules = _modules()
    for name, text in modules.items():
        if name == "states.js":
            continue
        for state in (TurnState.NEEDS_RECONCILIATION, TurnState.CANCELLED, IDLE):
            assert f'"{state}"' not in text, (name, state)


def test_every_import_is_a_public_asset_and_every_module_is_imported() -> None:
    modules = _modules()
    imported = {"console.js"}  # the entry: the shell's one script
    for name, text in modules.items():
        for target in _IMPORT.findall(text):
            assert target in modules, f"{name} imports {target}, which is not served"
            imported.add(target)
    assert imported == set(modules)
    for name in ASSETS:
        assert CONSOLE_PATHS.fullmatch(f"/console/static/{name}"), name
    version = ASSETS["console.js"].etag.strip('"')
    entry = f'<script type="module" src="/console/static/console.js?v={version}">'
    assert re.findall(r"<script\b[^>]*>", shell()) == [entry]
