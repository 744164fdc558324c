"""The public face of the distribution: the ``turnkeep`` command, the typed HTTP client
(``turnkeep.client``) and the ACP agent over stdio (``turnkeep.acp``). Imports nothing
of api/, worker/ or store/: it starts their processes or talks to the API."""
