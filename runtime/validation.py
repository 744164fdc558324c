"""JSON Schema validators, built once per schema.

``jsonschema.validate`` checks the schema against its metaschema on every call,
which cost more than the rest of a step; a prepared validator does not.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from turnkeep.runtime.hashing import canonical_json


@lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Validator:
    import json

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator: Validator = cls(schema)
    return validator


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` (the best match) when ``instance`` is invalid."""
    validator = _validator(canonical_json(schema))
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error
