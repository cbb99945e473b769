"""curator: the weekly weeding of each vault namespace. A model proposes cuts by small
integer handle, with a reason from a closed set and evidence; code validates the verdict,
re-verifies the listing under row locks and executes the cuts behind circuit breakers.
Every cut is archived with a tombstone, restorable for a retention window, then purged
with a record. Merges and contradictions are staged into `<ns>__dream` for review.

Owns: the listing, its handles and fingerprint (listing.py), the prompt (prompt.py), the
verdict schema and its validation (verdict.py), the ceiling (breaker.py), the settings and
repository of a namespace (config.py), the agents that judge (agent.py: `claude -p` whose
only tools are repo_server.py's MCP server; tool_loop.py: the API tool loop; both over
repo_tools.py, confined to the repo, the model's arguments checked by tool_args.py and
every answer masked), proposing
(propose.py), executing (execute.py), staging consolidations (consolidate.py), restore,
purge and the tombstones == archives invariant (archive.py), and what faces read
(service.py).

May import: dream (nothing yet: staging goes through the vault's store), vault, query, llm,
privacy, store, settings, days; the `mcp` SDK for repo_server.py only. Never Dagster or a
face.
"""
