from memory_platform.cli.main import app, main

__all__ = ["app", "main"]
