"""Moved: the submit path is the package ``api.service``, one module per verb
(admission, reads, cancel, answers, follow; its docstring has the rules every surface
shares). This module re-exports its public names for one release."""

from __future__ import annotations

import warnings

from api.service.access import may_write, visible
from api.service.admission import admit, after_admission
from api.service.answers import Answered, after_answer, answer, open_request
from api.service.cancel import Cancelled, after_cancel, cancel, cancel_children
from api.service.follow import FOLLOW_PAGE, Delta, follow
from api.service.ids import turn_id
from api.service.reads import read, turns_of, wait

__all__ = [
    "FOLLOW_PAGE",
    "Answered",
    "Cancelled",
    "Delta",
    "admit",
    "after_admission",
    "after_answer",
    "after_cancel",
    "answer",
    "cancel",
    "cancel_children",
    "follow",
    "may_write",
    "open_request",
    "read",
    "turn_id",
    "turns_of",
    "visible",
    "wait",
]

warnings.warn(
    "api.submit moved to the package api.service (admission, reads, cancel, answers, "
    "follow); this alias goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
