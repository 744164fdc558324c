"""One module per scenario. Each has ``run(r: Run) -> dict`` that returns its details
and puts its headline figures (numbers) in ``r.figures``; bench/run.py calls them in
the order of ``ORDER``."""
