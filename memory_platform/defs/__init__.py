"""The Dagster definitions, one folder per domain (ingest, search, dream, vault, curator,
recall, orchard, analytics), each with its assets.py, checks.py, automation.py (sensors and
schedules) and jobs.py as it needs them; `resources.py` binds the shared resources.
`memory_platform.definitions` loads this folder with `dagster.load_from_defs_folder`:
every module here is imported and its Dagster objects registered, so nothing is listed by
hand. Thin wrappers: each calls a domain's service and reports what it did as metadata."""

# Dagster's beta/preview notices, filtered before any asset is defined.
import memory_platform.assets  # noqa: F401
