"""The command line face: main.py assembles the commands of cairn.py, dream.py, curator.py,
review.py, vault.py, orchard.py, tokens.py, serve.py, hooks.py and bench.py over common.py."""

from memory_platform.cli.main import app, main

__all__ = ["app", "main"]
