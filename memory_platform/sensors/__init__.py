"""Sensors and schedules: thin Dagster wrappers over the domains' trigger logic (which files
changed, which sessions ended, what is undreamed, what waits for review)."""
