"""The REST face of cairn (FastAPI)."""
