"""query: reading cairn back. Embeddings of events (embeddings.py), hybrid search
(search.py: dense + keyword pools fused), summaries made at query time (summarize.py).

May import: ingest, llm, store, privacy, settings. Never dream, vault, Dagster or a face.
"""
