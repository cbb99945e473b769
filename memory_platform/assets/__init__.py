"""Dagster assets, one module per layer (cairn, embeddings, dream, vault): thin wrappers that
call a domain's service and report what it did as metadata."""
