"""ingest: getting every turn from every export into cairn, verbatim and exactly once.

Owns: the catalog of source files (catalog.py: discovery, hashing, event-time ranges), the
importer (importer.py: skip / resume / parse each file, per-record errors), the row writer
(rows.py), the Parquet lake copy (lake.py), the data-quality expectations (quality.py) and
Claude Code's SessionEnd queue (hooks.py).

May import: adapters, store, settings. Never another domain, Dagster or a face.
"""
