"""The wire shapes' homes (issue 22): a body of the OpenAPI document the client parses
too is the client's model closed, and an open request shows a person exactly the fields
of the client's ``PendingInput`` (defined once, in turnkeep/models.py)."""

from __future__ import annotations

from turnkeep import models
from turnkeep.api.http import bodies
from turnkeep.api.service import wire
from turnkeep.runtime.pending import AskedInput


def test_the_documents_bodies_are_the_client_models_closed() -> None:
    """A body the client parses too is a subclass of its model, no second definition."""
    shared = [
        name
        for name, value in vars(bodies).items()
        if isinstance(value, type) and value.__module__ == bodies.__name__ and hasattr(models, name)
    ]
    assert len(shared) == 34
    for name in shared:
        assert issubclass(getattr(bodies, name), getattr(models, name)), name


def test_pending_json_keeps_the_wire_models_fields_in_order() -> None:
    pending = {name: name for name in reversed(list(models.PendingInput.model_fields))}
    pending["tenant_id"] = "never shown"
    shown = wire.pending_json(AskedInput.from_json(pending))
    assert shown is not None
    assert list(shown) == list(models.PendingInput.model_fields)
    assert "tenant_id" not in shown
    assert wire.pending_json(None) is None
