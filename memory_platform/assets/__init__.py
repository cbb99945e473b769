"""Dagster assets, one module per layer (cairn, embeddings, dream, vault): thin wrappers that
call a domain's service and report what it did as metadata."""

import warnings

# We use backfill policies (beta) knowingly (ARCHITECTURE.md says why); Dagster's notice
# would be printed by every process that loads the definitions (webserver, daemon, runs).
warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
