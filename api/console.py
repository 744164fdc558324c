"""The web console: ``GET /console``, a page for people that reads the JSON API.

The server sends a static shell and nothing else: an HTML page, its ES modules and one
stylesheet (api/console/, package data; the browser loads the modules as they are:
no build step, no CDN). One module, ``states.js``, is written here from
runtime/states.py (the turn's states, the journal's event types), so the page holds
no copy of the state machine to drift. The shell and the assets hold no tenant
data, so they are served without a token (``turnkeep.api.auth.CONSOLE_PATHS``). The page asks
for an API token, keeps it in the tab's ``sessionStorage`` and sends it as
``Authorization: Bearer`` on every call to ``/v1``: every datum the console shows
comes through the API under that token, so tenancy and roles hold as for any client.
A turn's live events come over SSE with a short-lived stream token
(api/stream_tokens.py), never the bearer token in a URL; without a stream token
secret configured, the page polls the turn's timeline instead and says so.

Every response of the console carries a strict Content-Security-Policy (scripts and
styles from this origin only, no inline script, no framing); the shell is
``Cache-Control: no-store``, the assets are revalidated by their ETag. The modules
render data with ``textContent`` only. docs/console.md has the rest.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from turnkeep.api.service.wire import IDLE
from turnkeep.runtime.states import TERMINAL_EVENTS, TERMINAL_STATES, EventType, TurnState
from turnkeep.store.errors import NotFound

router = APIRouter(include_in_schema=False)

#: what a console response may load and who may frame it (nobody)
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

_MEDIA = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
#: what an asset may be called (the route and ``turnkeep.api.auth.CONSOLE_PATHS`` say the same)
_NAME = re.compile(r"^[a-z]+\.(js|css)$")


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


def _read(name: str) -> bytes:
    return (resources.files("turnkeep.api") / "console" / name).read_bytes()


def _asset(name: str, body: bytes) -> Asset:
    digest = hashlib.sha256(body).hexdigest()[:16]
    return Asset(body, _MEDIA[name[name.rfind(".") :]], f'"{digest}"')


def states_module() -> bytes:
    """``states.js``: the names of runtime/states.py the page needs, as an ES module."""
    names = {
        #: a badge's known states: a session's (idle, or its active turn's) and a turn's
        "SESSION_STATES": [IDLE, *TurnState],
        "TURN_STATES": list(TurnState),
        "TERMINAL_STATES": [s for s in TurnState if s in TERMINAL_STATES],
        #: the committed event types the page listens for on a session's stream
        "EVENT_TYPES": list(EventType),
        "TERMINAL_EVENTS": [TERMINAL_EVENTS[s] for s in TurnState if s in TERMINAL_EVENTS],
    }
    lines = ["// Written by api/console.py from runtime/states.py: not a file to edit."]
    lines += [f"export const {k} = Object.freeze({json.dumps(v)});" for k, v in names.items()]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _assets() -> dict[str, Asset]:
    files = (resources.files("turnkeep.api") / "console").iterdir()
    found = {f.name: f.read_bytes() for f in files if _NAME.fullmatch(f.name)}
    found["states.js"] = states_module()
    return {name: _asset(name, body) for name, body in sorted(found.items())}


#: read once, at import: the files ship with the package
ASSETS = _assets()
_SHELL = Template(_read("index.html").decode("utf-8"))


def shell(root_path: str = "") -> str:
    """The page: no data, only where its assets are (``root_path``: the app's mount
    point behind a proxy) and their versions, for cache busting (the modules the entry
    imports go unversioned: ``no-cache`` has the browser revalidate each one)."""
    root = html.escape(root_path.rstrip("/"), quote=True)
    return _SHELL.substitute(
        root=root,
        js=ASSETS["console.js"].etag.strip('"'),
        css=ASSETS["console.css"].etag.strip('"'),
    )


@router.get("/console")
async def console_page(request: Request) -> Response:
    return Response(
        shell(str(request.scope.get("root_path", ""))),
        media_type="text/html; charset=utf-8",
        headers={**SECURITY_HEADERS, "Cache-Control": "no-store"},
    )


AssetName = Annotated[str, Path(pattern=r"^[a-z]+\.(js|css)$")]


@router.get("/console/static/{name}")
async def console_asset(request: Request, name: AssetName) -> Response:
    asset = ASSETS.get(name)
    if asset is None:
        raise NotFound("no such console asset")
    headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache", "ETag": asset.etag}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)
