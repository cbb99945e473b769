"""Benchmarks (`memory-platform bench ...`): one module per benchmark (`ingest`, `search`,
`dedup`, `review`), each printing its figures and writing them to benchmarks/results/. The
search benchmark's parts live in `locomo` and `search_latency`; what several benchmarks
share (the database server, scratch databases, timing, percentiles, the machine) is in
`common`, so benchmarks never import each other. Tools, not product: nothing outside the
CLI's bench commands imports this package (an import-linter contract).
"""
