"""vault: durable memories, one namespace per project or persona, and who may touch them.

Owns the rules every face keeps, in service.py: scope (a token limited to `work` never
sees `personal`), agents write only into `<ns>__ideas` and nothing but the dream into
`<ns>__dream` (so no agent and no autonomous job writes a primary namespace), no
credentials in memories, every change audited. Besides: memories.py (embedding, fused
search, listing: unscoped internals), context.py (the one context pack: MCP, REST and
the hooks) with budget.py (its token count), topics.py (category and topic rules every
write path applies), review.py (review
decisions: approve, supersede, skip), queue.py (what waits for review), export.py,
tokens.py (API tokens and `Scope`), routing.py (which namespace a conversation feeds),
models.py (the answer shapes REST and MCP share), demo.py (seeding the demo vault),
gate.py (the dedup gate every entry to review passes: the dream's candidates and agents'
ideas; with significant.py, its token rule, and judge.py, its LLM judge's prompt),
imports/ (other tools' memories staged in `<ns>__ideas` for review).

May import: query (embeddings), llm (the gate's judge), store, privacy, settings,
synthetic (the demo vault's data). Never dream, Dagster or a face.
"""
