"""recall: memories reach the agent without being asked.

Owns: the Claude Code hooks' logic (hooks.py: SessionStart and UserPromptSubmit inputs to
the context to add; errors logged, never raised), the resident process the hooks talk to
(server.py) and its stdlib-only client (hook_client.py), the markdown wiki of the vault
(wiki.py builds it, deterministic; intake.py takes people's edits back as audited hand
edits), lint (lint.py: contradictions, stale claims, orphans, near-duplicates, as findings
for the review gate; findings.py resolves them), and the classifier's LLM fallback and the
backfill of memories written before topics (classify.py). The context pack itself is
vault/context.py, which MCP, REST and these hooks share.

May import: vault, query, dream (its dedup judge, for lint's contradictions), llm, store,
privacy, settings. Never Dagster or a face.
"""
