"""The orchard domain's Dagster definitions."""
