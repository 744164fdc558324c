"""The wire shapes' homes (issue 22): the old module paths hand out the very objects of
the new ones for one release, and an open request shows a person exactly the fields of
the client's ``PendingInput`` (defined once, in turnkeep/models.py)."""

from __future__ import annotations

import api.response_models
import api.schemas
import api.views
from api.http import bodies
from api.service import requests, wire
from turnkeep import models


def test_old_paths_re_export_the_new_homes() -> None:
    for old, new in (
        (api.schemas, requests),
        (api.response_models, bodies),
        (api.views, wire),
    ):
        for name in old.__all__:
            assert getattr(old, name) is getattr(new, name), f"{old.__name__}.{name}"


def test_the_documents_bodies_are_the_client_models_closed() -> None:
    """A body the client parses too is a subclass of its model, no second definition."""
    shared = [n for n in api.response_models.__all__ if hasattr(models, n)]
    assert len(shared) == 19
    for name in shared:
        assert issubclass(getattr(bodies, name), getattr(models, name)), name


def test_pending_json_keeps_the_wire_models_fields_in_order() -> None:
    pending = {name: name for name in reversed(list(models.PendingInput.model_fields))}
    pending["tenant_id"] = "never shown"
    shown = wire.pending_json(pending)
    assert shown is not None
    assert list(shown) == list(models.PendingInput.model_fields)
    assert "tenant_id" not in shown
    assert wire.pending_json(None) is None and wire.pending_json({}) is None
