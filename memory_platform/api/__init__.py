"""The REST face (FastAPI): cairn routes (app.py), the vault (vault.py), orchard
(orchard.py) and the review dashboard (with its orchard page). Routes hold no SQL and no rules: they call the domain services."""
