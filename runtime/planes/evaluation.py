"""The evaluation plane: datasets, experiments run by real workers, promotions gated
on them; beat advances the running experiments."""

from turnkeep.runtime.names import TASK_ADVANCE_EXPERIMENTS
from turnkeep.runtime.planes import Beat, Plane

PLANE = Plane(
    name="evaluation",
    order=80,
    about="datasets, experiments, promotions (docs/evaluation.md)",
    routers=(
        "turnkeep.api.http.datasets:lines_router",
        "turnkeep.api.http.datasets:router",
        "turnkeep.api.http.experiments:router",
        "turnkeep.api.http.promotions:router",
    ),
    parts=("datasets", "experiments", "promotions"),
    beat=(Beat("experiments", TASK_ADVANCE_EXPERIMENTS, "evaluation.interval"),),
    settings=("evaluation",),
    holds=("eval_results", "eval_cases", "eval_datasets", "eval_experiments", "agent_promotions"),
)
