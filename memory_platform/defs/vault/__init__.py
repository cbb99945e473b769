"""The vault domain's Dagster definitions."""
