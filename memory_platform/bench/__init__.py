"""Benchmarks (`memory-platform bench ...`): one module per benchmark, each printing its
figures and writing them to benchmarks/results/. Tools, not product: nothing outside the
CLI's bench commands imports this package.
"""
