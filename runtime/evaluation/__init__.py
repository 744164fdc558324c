"""The evaluation plane's pure core (docs/evaluation.md): a turn's journal as its
assertions read it (trajectory.py), what each assertion says of it (verdicts.py),
assertions derived from a real turn (derive.py), the ids an experiment's turns are
admitted under (case_ids.py), how an experiment's approvals are answered
(approvals.py), its figures and a comparison of two (summary.py), a judge's turn
(judge.py), and the promotion policy and its checks (gate.py). No I/O: the store and
the driver (recovery/experiments.py) hand it what they read."""
