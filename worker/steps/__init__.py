"""The steps of a turn, one module per kind: a model call (model.py), a tool call
(tool.py), a delegation to specialists (delegate.py). Each receives the turn handle
(worker/turn.py) and performs one step's effects; runtime/decisions.py decides.
"""

from __future__ import annotations

from typing import Literal

#: what a tool step did: "run" it (next), "settled" (its outcome is committed) or
#: "parked" (the turn waits for an answer)
Verdict = Literal["run", "settled", "parked"]
