"""The collector: a laptop's side of "many machines, one memory" (issue 24). It watches what
`up` watches, copies new bytes of those files into a bounded on-disk spool (scan.py, spool.py)
and ships the spool to the central server's POST /ingest/{machine}/records (push.py, wire.py),
which imports them through the same writer as local files (ingest/received.py).

Imports no database, Dagster, numpy or model (tests/test_collect.py checks `sys.modules`):
settings, the adapters' discovery, `confined` and httpx only."""
