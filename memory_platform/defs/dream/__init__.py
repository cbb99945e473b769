"""The dream domain's Dagster definitions."""
