"""still, the dream cycle: from raw turns to memories staged for review.

Owns: what to dream (plan.py) and what triggers a dream (triggers.py: ended sessions, the
throttle), proposing candidates with the model (propose.py: masking, citations, dates,
routing), the dedup step (dedup.py: each candidate through the vault's dedup gate,
vault/gate.py, its verdict recorded), staging into `<ns>__dream` (staging.py) and the
digest (digest.py).

It writes to shadow namespaces only: the rule that nothing autonomous writes to a primary
namespace is held by the vault (vault/service.py, a CHECK in PostgreSQL) and by the
blocking asset check `no_primary_namespace_writes`.

May import: vault, query, ingest, llm, adapters, store, privacy, settings, days. Never
Dagster or a face.
"""
