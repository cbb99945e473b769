"""The REST face (FastAPI): cairn routes (app.py), the vault (vault.py) and the review
dashboard. Routes hold no SQL and no rules: they call the domain services."""
