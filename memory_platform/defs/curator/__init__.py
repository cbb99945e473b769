"""The curator domain's Dagster definitions."""
