"""Observability: what the processes tell their operators, and the faults they can be
made to meet.

logs.py      JSON (or text) log records with the turn's ids bound
tracing.py   OpenTelemetry traces, one per turn (off unless TURNKEEP_OTEL_ENDPOINT)
redact.py    known secrets out of every checkpoint, live delta, log record and problem
faults.py    named fault points the chaos tests arm (TURNKEEP_FAULTS)
"""
