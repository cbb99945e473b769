"""privacy: what must never leave home. Credential detection and masking (masking.py),
applied before any text reaches a model and before anything reaches the vault; personal
data (personal.py: e-mail, phone, card, IBAN, government id, address), which marks a
memory `sensitive` (never injected, kept out of the wiki, masked in the dashboard);
egress.py, the one masking rule every text leaving the store passes (`outgoing`).

May import: nothing of the project but settings.
"""
