"""The ingest domain's Dagster definitions."""
