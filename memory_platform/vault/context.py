"""The context pack: the one service that decides what of the vault reaches a session. MCP's
`vault_context`, REST's `GET /vault/context` and the Claude Code hooks (recall/hooks.py)
all call `context`; the scope rules are vault/service.py's.

A pack is, in order and within a token budget counted with a real tokenizer
(vault/budget.py):
1. the index: the namespace's standing facts (how the person wants the assistant to work,
   who they are, what was decided), small and stable; with a project (a session start);
2. the memories most relevant to the prompt (a query), or, with only a project, the
   project's facts (vault/project.py: from its routing, never from a model, so the pack is
   the same whichever process builds it);
each a current fact (no valid_to, not superseded) of a primary namespace, with its id
(`#42`) so an answer can cite it, wrapped in `<memory-platform-context>`, which the dream
cuts out of the turns it reads (recalled memories never come back as new ones).
Sensitive memories (personal data, credentials: privacy/personal.py) are never in a pack:
the database flag is checked, and each line is checked again before it is packed.
"""

from collections.abc import Collection, Sequence

from memory_platform.privacy.personal import is_sensitive
from memory_platform.query.embeddings import Embedder
from memory_platform.query.inputs import check_optional_text
from memory_platform.store import Database, memory_search
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import recall as recall_store
from memory_platform.vault import memories
from memory_platform.vault import project as project_facts
from memory_platform.vault.budget import TOKENIZER_NAME, count_many, count_tokens
from memory_platform.vault.service import check, embed_text, visible_primaries
from memory_platform.vault.tokens import Scope

# What this system injects into a session is wrapped in this marker; the dream cuts such
# blocks out of the turns it reads.
CONTEXT_MARKER = "memory-platform-context"
CONTEXT_POOL = 100  # candidates ranked before packing a context within its budget
# The index: these categories, in this order, oldest first (standing facts change least).
INDEX_CATEGORIES = ("feedback", "user", "decision")
INDEX_MAX = 30  # lines read for the index before the budget decides
INDEX_SHARE = 0.5  # the index takes at most this share of the budget
RELEVANCE = ("hybrid", "keyword")
VERBATIM_MAX_WORDS = 4  # a port, a version, a name: longer queries (prompts) never match whole


def _neutralize(text: str) -> str:
    """One line, and no way for a memory's text to open or close the context block."""
    line = " ".join(text.split())
    return line.replace(f"</{CONTEXT_MARKER}", f"&lt;/{CONTEXT_MARKER}").replace(
        f"<{CONTEXT_MARKER}", f"&lt;{CONTEXT_MARKER}")


def _line(m: dict) -> str:
    label = m["category"] + (f"/{m['topic']}" if m.get("topic") else "")
    return f"- [{label}] {_neutralize(m['text'])} [#{m['id']}]\n"


def _packable(m: dict, scope: Scope, chosen: Collection[str]) -> bool:
    """Defence in depth over the SQL's filters: a current, reviewed, in-scope fact whose
    text holds no sensitive data (checked again here: a row written before the flag
    existed and not yet backfilled is caught too)."""
    return (m["status"] == "active" and m["review"] is None and m["superseded_by"] is None
            and m["valid_to"] is None and not m.get("sensitive")
            and scope.permits(m["namespace"]) and m["namespace"] in chosen
            and not is_sensitive(m["text"]))


def _choose_namespaces(db: Database, scope: Scope, namespaces: Sequence[str] | None,
                       project: str | None, query: str | None) -> list[str]:
    with db.connect() as conn:
        if namespaces:
            chosen: list[str] = []
            for name in namespaces:
                kind, _ = namespace_store.parse_namespace(name)
                if kind != "primary":
                    raise ValueError(f"{name!r} is a shadow namespace: a context holds "
                                     f"reviewed memories of primary namespaces only")
                check(scope, name)
                if name not in chosen:
                    chosen.append(name)
            return chosen
        chosen = visible_primaries(conn, scope)
    if project and not query:
        routed = project_facts.describe(project).namespace
        if routed in chosen:
            chosen = [routed]
    return chosen


def _relevant(db: Database, chosen: list[str], query: str, *, relevance: str,
              min_similarity: float, embedder: Embedder | None,
              fill_missing: bool) -> list[int]:
    """Ids of current facts relevant to a query, most relevant first: verbatim matches
    (short queries), then rare stems shared with the query (most shared first), then
    nearest by meaning above the floor."""
    ranked: list[int] = []
    with db.connect() as conn:
        if len(query.split()) <= VERBATIM_MAX_WORDS:
            ranked += [h["id"] for h in memory_search.keyword_matches(
                conn, query, chosen, limit=CONTEXT_POOL, current_only=True)]
        for hit in recall_store.fulltext_matches(conn, query, chosen, limit=CONTEXT_POOL):
            # One shared word of a long prompt is chance; two, or the only word, is not.
            if hit["matched"] >= min(2, hit["terms"]) and hit["id"] not in ranked:
                ranked.append(hit["id"])
    if relevance == "keyword":
        return ranked
    embedder, vector = embed_text(embedder, query)
    if fill_missing:
        memories.embed_missing_memories(db, embedder)
    with db.connect() as conn:
        semantic = memory_search.nearest_memories(conn, embedder.name, embedder.dims, vector,
                                                  chosen, k=CONTEXT_POOL, reviews=(),
                                                  current_only=True)
    ranked += [h["id"] for h in semantic
               if h["id"] not in ranked and h["similarity"] >= min_similarity]
    return ranked


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
    index: bool | None = None,
    relevance: str = "hybrid",
    exclude_ids: Collection[int] = (),
    max_memories: int | None = None,
    fill_missing: bool = True,
) -> dict:
    """The pack for a session or a question, from the primary namespaces asked for (default:
    those in scope; with only a project, the namespace its routing rule names when in
    scope).

    `index` (default: when a project is given) puts the namespaces' standing facts first,
    in at most half the budget. Then the memories most relevant to `query` (or, with no
    query, the project's facts: vault/project.py, the same for every `relevance`):
    verbatim and shared-word matches, then by meaning above `min_similarity`
    (`relevance="keyword"` skips the embedding: the prompt hook's fast path). `exclude_ids` are left out (already in the session), `max_memories` caps the
    relevant section. `fill_missing=False` skips embedding memories written without a
    vector first (every write path embeds; the hooks skip the check to stay fast). The budget counts the whole block, wrapper included, with the
    tokenizer of vault/budget.py.

    Returns {context, memory_ids, index_ids, namespaces, tokens_used, token_budget,
    omitted, tokenizer}: context is "" when nothing qualifies; omitted counts relevant
    memories that did not fit."""
    query = check_optional_text(query, "query").strip() if query else None  # a NUL: 422
    project = check_optional_text(project, "project").strip() if project else None
    if token_budget < 64:
        raise ValueError("token_budget must be at least 64")
    if relevance not in RELEVANCE:
        raise ValueError(f"unknown relevance {relevance!r}; use one of {', '.join(RELEVANCE)}")
    # The scope is checked first: a namespace outside it is refused as such, whatever else
    # is wrong with the request.
    chosen = _choose_namespaces(db, scope, namespaces, project, query)
    if not query and not project:
        raise ValueError("give a query or a project")
    index = bool(project) if index is None else index
    result = {"context": "", "memory_ids": [], "index_ids": [], "namespaces": chosen,
              "tokens_used": 0, "token_budget": token_budget, "omitted": 0,
              "tokenizer": TOKENIZER_NAME}
    if not chosen:
        return result
    excluded = set(exclude_ids)
    standing: list[dict] = []
    if index:
        with db.connect() as conn:
            standing = recall_store.standing_facts(conn, chosen, INDEX_CATEGORIES, INDEX_MAX)
        standing = [m for m in standing if m["id"] not in excluded
                    and _packable(m, scope, chosen)]
    if query:
        ranked = _relevant(db, chosen, query, relevance=relevance,
                           min_similarity=min_similarity, embedder=embedder,
                           fill_missing=fill_missing)
        about = "the prompt"
    else:
        where = project_facts.describe(project)
        ranked = project_facts.project_facts(db, where, chosen, limit=CONTEXT_POOL)
        about = f"project {where.name}"
    taken = {m["id"] for m in standing} | excluded
    with db.connect() as conn:
        rows = memory_store.memories_by_id(conn, [i for i in ranked if i not in taken])
    relevant: list[dict] = []
    for i in ranked:  # checked in order, and only as many as can be used
        if max_memories is not None and len(relevant) >= max_memories:
            break
        if i in rows and _packable(rows[i], scope, chosen):
            relevant.append(rows[i])
    return {**result, **_pack(chosen, standing, relevant, token_budget,
                              about=about)}


def _pack(chosen: list[str], standing: list[dict], relevant: list[dict], budget: int, *,
          about: str) -> dict:
    head = (f"<{CONTEXT_MARKER}>\nMemories from the user's vault ({', '.join(chosen)}), "
            f"recorded earlier; they may be out of date. Cite one by its id, e.g. [#12].\n")
    tail = f"</{CONTEXT_MARKER}>"
    index_head, relevant_head = "Standing facts:\n", f"Relevant to {about}:\n"
    used = count_tokens(head) + count_tokens(tail)
    picked_index: list[tuple[int, str]] = []
    if standing:
        lines = [_line(m) for m in standing]
        cost = count_many(lines)
        share = int(budget * INDEX_SHARE) - count_tokens(index_head)
        spent = 0
        for m, line, n in zip(standing, lines, cost, strict=True):
            if spent + n > share:
                continue
            picked_index.append((m["id"], line))
            spent += n
        if picked_index:
            used += spent + count_tokens(index_head)
    picked: list[tuple[int, str]] = []
    omitted = 0
    if relevant:
        lines = [_line(m) for m in relevant]
        cost = count_many(lines)
        header = count_tokens(relevant_head)
        for m, line, n in zip(relevant, lines, cost, strict=True):
            extra = n + (header if not picked else 0)
            if used + extra > budget:
                omitted += 1  # a shorter, less relevant memory may still fit: keep going
                continue
            picked.append((m["id"], line))
            used += extra
    if not picked_index and not picked:
        return {"omitted": omitted}

    def assemble() -> str:
        parts = [head]
        if picked_index:
            parts += [index_head, *(line for _, line in picked_index)]
        if picked:
            parts += [relevant_head, *(line for _, line in picked)]
        return "".join(parts) + tail

    block = assemble()
    tokens = count_tokens(block)
    while tokens > budget and picked:  # the parts' sum and the whole can differ at joins
        picked.pop()
        omitted += 1
        block = assemble()
        tokens = count_tokens(block)
    return {"context": block, "memory_ids": [i for i, _ in picked_index + picked],
            "index_ids": [i for i, _ in picked_index], "tokens_used": tokens,
            "omitted": omitted}
