"""The recall domain's Dagster definitions."""
