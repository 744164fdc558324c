"""The public face of the distribution: the ``turnkeep`` command (and, later, the typed
client). Imports nothing of api/, worker/ or store/: it starts their processes."""
