"""The context pack: the current memories most relevant to a query or a project, packed
within a token budget and wrapped in `<memory-platform-context>`, which the dream cuts out
of the turns it reads (so recalled memories never come back as new ones). MCP's
`vault_context` and the hooks call `context`; the scope rules are vault/service.py's."""

import math
from collections.abc import Sequence
from pathlib import PurePath

from memory_platform.query.embeddings import Embedder
from memory_platform.store import Database, memory_search
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import memories as vault_service
from memory_platform.vault.routing import Routing
from memory_platform.vault.service import check, embed_text, visible_primaries
from memory_platform.vault.tokens import Scope

# What this system injects into a session is wrapped in this marker; the dream cuts such
# blocks out of the turns it reads.
CONTEXT_MARKER = "memory-platform-context"
CHARS_PER_TOKEN = 4
CONTEXT_POOL = 100  # candidates ranked before packing a context within its budget


def _neutralize(text: str) -> str:
    """One line, and no way for a memory's text to open or close the context block."""
    line = " ".join(text.split())
    return line.replace(f"</{CONTEXT_MARKER}", f"&lt;/{CONTEXT_MARKER}").replace(
        f"<{CONTEXT_MARKER}", f"&lt;{CONTEXT_MARKER}")


def _route(project: str) -> str | None:
    return Routing.load().route(project=project, source="claude-code")


def context(
    db: Database,
    scope: Scope,
    *,
    query: str | None = None,
    project: str | None = None,
    namespaces: Sequence[str] | None = None,
    token_budget: int = 1500,
    min_similarity: float = 0.15,
    embedder: Embedder | None = None,
) -> dict:
    """The active memories most relevant to `query` (or to `project`) in the primary
    namespaces asked for (default: those in scope; with only a project, the namespace its
    routing rule names when in scope), packed most relevant first into `token_budget`
    tokens (counted as 4 characters a token, the wrapper included) and wrapped in
    <memory-platform-context> so a later dream never re-extracts them.

    Superseded facts and facts whose validity ended are left out. With a query, memories
    below `min_similarity` that do not contain the query verbatim are left out too; with
    only a project, the namespace's memories are ranked by similarity to the project name.
    Returns {context, memory_ids, namespaces, tokens_used, token_budget, omitted}: context
    is "" when nothing qualifies; omitted counts relevant memories that did not fit."""
    query = query.strip() if query else None
    project = project.strip() if project else None
    if not query and not project:
        raise ValueError("give a query or a project")
    if token_budget < 64:
        raise ValueError("token_budget must be at least 64")
    with db.connect() as conn:
        if namespaces:
            chosen = []
            for name in namespaces:
                kind, primary = namespace_store.parse_namespace(name)
                if kind != "primary":
                    raise ValueError(f"{name!r} is a shadow namespace: a context holds "
                                     f"reviewed memories of primary namespaces only")
                check(scope, name)
                if name not in chosen:
                    chosen.append(name)
        else:
            chosen = visible_primaries(conn, scope)
            if project and not query:
                routed = _route(project)
                if routed in chosen:
                    chosen = [routed]
    text = query or (PurePath(project).name or project)
    result = {"context": "", "memory_ids": [], "namespaces": chosen, "tokens_used": 0,
              "token_budget": token_budget, "omitted": 0}
    if not chosen:
        return result
    embedder, vector = embed_text(embedder, text)
    vault_service.embed_missing_memories(db, embedder)
    with db.connect() as conn:
        semantic = memory_search.nearest_memories(conn, embedder.name, embedder.dims, vector,
                                                  chosen, k=CONTEXT_POOL, reviews=(),
                                                  current_only=True)
        keyword = memory_search.keyword_matches(conn, query, chosen, limit=CONTEXT_POOL,
                                                current_only=True) if query else []
        ranked_ids: list[int] = [h["id"] for h in keyword]
        floor = min_similarity if query else -math.inf
        ranked_ids += [h["id"] for h in semantic
                       if h["id"] not in ranked_ids and h["similarity"] >= floor]
        rows = memory_store.memories_by_id(conn, ranked_ids)
    candidates = [rows[i] for i in ranked_ids if i in rows]
    # The pools hold current primary facts only (current_only); this is defence in depth
    # for the scope and the row's state, with no second clock read.
    candidates = [m for m in candidates
                  if m["status"] == "active" and m["review"] is None
                  and m["superseded_by"] is None
                  and scope.permits(m["namespace"]) and m["namespace"] in chosen]
    if not candidates:
        return result
    head = (f"<{CONTEXT_MARKER}>\nMemories from the user's vault ({', '.join(chosen)}), most "
            f"relevant first; recorded earlier, they may be out of date.\n")
    tail = f"</{CONTEXT_MARKER}>"
    budget = token_budget * CHARS_PER_TOKEN
    used = len(head) + len(tail)
    lines: list[str] = []
    picked: list[int] = []
    omitted = 0
    for m in candidates:
        line = f"- [{m['category']}] {_neutralize(m['text'])} ({m['namespace']} #{m['id']})\n"
        if used + len(line) > budget:
            omitted += 1  # a shorter, less relevant memory may still fit: keep going
            continue
        lines.append(line)
        picked.append(m["id"])
        used += len(line)
    if not picked:
        return {**result, "omitted": omitted}
    block = head + "".join(lines) + tail
    return {**result, "context": block, "memory_ids": picked,
            "tokens_used": math.ceil(len(block) / CHARS_PER_TOKEN), "omitted": omitted}
