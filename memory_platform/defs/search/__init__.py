"""The search domain's Dagster definitions."""
