"""dream."""
