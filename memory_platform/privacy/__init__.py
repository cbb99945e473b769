"""privacy: what must never leave home. Credential detection and masking (masking.py),
applied before any text reaches a model and before anything reaches the vault.

May import: nothing of the project but settings.
"""
