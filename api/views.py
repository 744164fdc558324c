"""Moved: a record as its public JSON lives in api/service/wire.py.

A plain re-export for one release (an internal module: no DeprecationWarning, every
importer of ours uses the new home)."""

from api.service.wire import IDLE, pending_json, session_json, turn_json, turn_location

_pending = pending_json

__all__ = ["IDLE", "pending_json", "session_json", "turn_json", "turn_location"]
