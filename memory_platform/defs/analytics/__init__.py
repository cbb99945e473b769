"""The analytics domain's Dagster definitions."""
