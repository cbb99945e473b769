"""The vault as the REST API and the MCP server see it: every read and write goes through a
`Scope` (memory_platform.vault.tokens), so a caller limited to `work` never reads, finds, counts
or writes anything of `personal`.

- Listing is a counted keyset page (`items`, `total`, `next_after_id`): never capped
  silently; a caller pages until `next_after_id` is None.
- A person's writes (REST with a person's token, the CLI) go to the namespace named; an
  agent's (MCP `vault_add`, REST with an agent token) go to `<namespace>__ideas` only, as
  source 'agent', review 'pending', after the dedup gate the dream's candidates pass
  (vault/gate.py). An agent changes only `__ideas` entries and never decides a review
  (`check_reviewer`).
- Edits and archives write their audit row (before/after) in the same statement; nothing
  is hard-deleted.
- No model in the loop but the vault embedder, for the new text of an add or an edit and
  for a search query, and the dedup gate's judge for an agent's idea when one is given.
"""

from memory_platform.llm import LLM
from memory_platform.privacy.egress import outgoing_fields
from memory_platform.privacy.masking import MASK, looks_like_secret
from memory_platform.query.embeddings import Embedder
from memory_platform.query.inputs import InvalidInput, check_optional_text, check_text
from memory_platform.store import Database, memory_embeddings
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import gate, memories
from memory_platform.vault.tokens import Scope
from memory_platform.vault.topics import slugify

MAX_PAGE = 1000
# A memory is a fact, not a file: a few sentences. Longer text is refused on every write
# path (REST, MCP, CLI), so one request cannot make every listing of a namespace huge.
MAX_TEXT_CHARS = 4000
DEFAULT_PAGE = 100
STATUSES = ("active", "archived", "all")
IDEA_SOURCES = ("agent", "import")  # who suggests into <ns>__ideas: agents, other tools' stores


class Forbidden(PermissionError):
    """The namespace is outside the caller's scope."""


class NotFound(LookupError):
    """No such memory or namespace (or none the caller may see)."""


class Conflict(RuntimeError):
    """The memory's state does not allow the change (an edit of an archived memory)."""


class TooLong(InvalidInput):
    """The memory's text is longer than MAX_TEXT_CHARS."""


def _status_filter(status: str) -> str | None:
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    return None if status == "all" else status


def check(scope: Scope, namespace: str) -> None:
    """Refuse a namespace outside the scope (and an invalid name, saying why)."""
    namespace_store.parse_namespace(namespace)
    if not scope.permits(namespace):
        raise Forbidden(f"namespace {namespace!r} is outside this caller's scope "
                        f"({scope.describe()})")


def _require(conn, scope: Scope, namespace: str) -> dict:
    check(scope, namespace)
    found = namespace_store.get_namespace(conn, namespace)
    if found is None:
        # A typo must not read as an empty vault: name what the caller may use instead.
        known = [n["name"] for n in namespace_store.list_namespaces(conn)
                 if scope.permits(n["name"])]
        raise NotFound(f"no vault namespace {namespace!r}; known: "
                       f"{', '.join(known) if known else 'none yet'}")
    return found


def _check_text(text: str, category: str | None) -> None:
    """The rules every write of a memory's text keeps."""
    check_text(text, "the memory's text")
    if not text.strip():
        raise ValueError("a memory needs some text")
    if len(text) > MAX_TEXT_CHARS:
        raise TooLong(f"a memory is one fact of at most {MAX_TEXT_CHARS} characters; this "
                      f"text has {len(text)}")
    if category is not None and category not in memory_store.CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of "
                         f"{', '.join(memory_store.CATEGORIES)}")
    if MASK in text or looks_like_secret(text):
        raise ValueError("refused: the text looks like it holds a credential; secrets are "
                         "never stored in the vault")


def check_reviewer(scope: Scope) -> None:
    """Refuse an agent's scope where a person must decide (review decisions): the gate
    exists so that what an agent suggests is judged by someone else."""
    if scope.agent:
        raise Forbidden("an agent token suggests memories; reviewing them needs a person's "
                        "token (memory-platform token create --kind person)")


def _check_agent_change(scope: Scope, namespace: str, memory_id: int) -> None:
    """An agent may change only what waits in an `__ideas` namespace: a reviewed memory is
    changed by a person."""
    if scope.agent and namespace_store.parse_namespace(namespace)[0] != "ideas":
        raise Forbidden(f"memory {memory_id} is in {namespace!r}; an agent token changes "
                        f"only suggestions in <namespace>__ideas (a person's token edits, "
                        f"archives and restores reviewed memories)")


def namespaces(db: Database, scope: Scope) -> list[dict]:
    """The namespaces in scope with their kind and count of active memories."""
    with db.connect() as conn:
        return [n for n in namespace_store.list_namespaces(conn) if scope.permits(n["name"])]


def visible_primaries(conn, scope: Scope) -> list[str]:
    return [n["name"] for n in namespace_store.list_namespaces(conn)
            if n["kind"] == "primary" and scope.permits(n["name"])]


def primary_namespaces(db: Database, scope: Scope | None = None) -> list[dict]:
    """The primary namespaces in scope (default: all), each {name, kind, active, ...}."""
    scope = scope or Scope.everything()
    with db.connect() as conn:
        return [n for n in namespace_store.list_namespaces(conn)
                if n["kind"] == "primary" and scope.permits(n["name"])]


def list_all(db: Database, scope: Scope, namespace: str, *,
             status: str = "active") -> tuple[list[dict], int]:
    """(every memory of the namespace, total): no cap, one snapshot (see
    memories.list_all)."""
    wanted = _status_filter(status)
    with db.connect() as conn:
        _require(conn, scope, namespace)
    rows, total = memories.list_all(db, namespace, status=wanted)
    return [shown(r) for r in rows], total


def list_page(db: Database, scope: Scope, namespace: str, *, after_id: int = 0,
              limit: int = DEFAULT_PAGE, status: str = "active") -> dict:
    """One page: {namespace, status, items, total, next_after_id}. `limit` above MAX_PAGE
    is refused, not clipped."""
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE} (page with next_after_id)")
    if after_id < 0:
        raise ValueError("after_id must be 0 or a memory id")
    wanted = _status_filter(status)
    with db.connect() as conn:
        _require(conn, scope, namespace)
        items, total, next_after = memory_store.page(conn, namespace, after_id=after_id,
                                                     limit=limit, status=wanted)
    return {"namespace": namespace, "status": status, "items": [shown(r) for r in items],
            "total": total, "next_after_id": next_after}


def get(db: Database, scope: Scope, memory_id: int) -> dict:
    """A memory by id. One outside the scope reads as missing: its id says nothing."""
    with db.connect() as conn:
        row = memory_store.get_memory(conn, memory_id)
    if row is None or not scope.permits(row["namespace"]):
        raise NotFound(f"no memory with id {memory_id}")
    return _shown(row)


def _shown(row: dict) -> dict:
    """A memory as the services acting on it see it (privacy.egress): a credential in its
    text masked, whatever the row's flag (writes refuse credentials, but a pattern may be
    newer than the row)."""
    return outgoing_fields(row, ("text", "why", "review_note"))


def shown(row: dict) -> dict:
    """A memory as a read leaves the vault (REST, MCP, the CLI): `_shown`, and personal
    data masked too when the memory is sensitive (agreed policy of issue 20: an agent never
    sees it; the review page alone shows a sensitive text on purpose, beside its masked
    copy, vault/queue.py)."""
    return outgoing_fields(_shown(row), ("text", "why", "review_note"),
                           personal=bool(row.get("sensitive")))


def read(db: Database, scope: Scope, memory_id: int) -> dict:
    """`get` as it leaves the vault: `shown`."""
    return shown(get(db, scope, memory_id))


def embed_text(embedder: Embedder | None, text: str):
    embedder = embedder or memories.vault_embedder()
    return embedder, embedder.embed([memory_store.normalize_text(text)])[0]


def add(db: Database, scope: Scope, namespace: str, text: str, category: str | None, *,
        actor: str, embedder: Embedder | None = None, topic: str | None = None,
        llm: LLM | None = None) -> dict:
    """A write over REST or the CLI. A person's goes into the namespace named (a primary or
    its `__ideas`; `__dream` is the dream's own); an agent's scope makes it a suggestion
    (`add_idea`: through the dedup gate, with `llm` as its judge, into `<primary>__ideas`,
    pending review). The same text twice returns the first (created=False). Without a
    category or topic, the rules of vault/topics.py choose them."""
    if scope.agent:
        return add_idea(db, scope, namespace, text, category, actor=actor, embedder=embedder,
                        topic=topic, llm=llm)
    kind, _ = namespace_store.parse_namespace(namespace)
    check(scope, namespace)
    if kind == "dream":
        raise ValueError(f"{namespace!r} holds the dream's output; write to the primary "
                         f"namespace or to its __ideas")
    _check_text(text, category)
    return memories.add(db, namespace, text, category, actor, "hand",
                        embedder=embedder or memories.vault_embedder(), topic=topic)


def add_idea(db: Database, scope: Scope, namespace: str, text: str, category: str | None, *,
             actor: str, why: str | None = None, embedder: Embedder | None = None,
             topic: str | None = None, llm: LLM | None = None,
             source: str = "agent") -> dict:
    """An agent's write: always into `<primary>__ideas` (source 'agent', review 'pending'),
    whether `namespace` names the primary or its ideas shadow; never a primary namespace.
    Text that looks like a credential is refused. A memory imported from another tool
    (vault/imports) is staged the same way, as source 'import'.

    An idea passes the dedup gate a dream candidate passes (vault/gate.py): text already in
    the primary or pending in ideas, a near-identical statement of a known fact (same
    significant tokens) or, with `llm` as the judge, one it calls the same fact is not added
    (created=False: the known memory's row, with `verdict` 'duplicate' or 'same_fact' and
    `reason`). What passes is staged with its verdict ('new' or 'contradiction') and
    `reason`. A grey-band idea with no judge given, or any idea when the vault's embedder is
    not the one the gate's thresholds were measured for (e.g. `openai`), is staged unjudged
    (verdict None, `reason` says so): the reviewer decides it."""
    kind, primary = namespace_store.parse_namespace(namespace)
    if kind == "dream":
        raise ValueError(f"{namespace!r} holds the dream's output; agents suggest into "
                         f"<namespace>__ideas")
    primary = namespace if kind == "primary" else primary
    if source not in IDEA_SOURCES:
        raise ValueError(f"a suggestion's source is one of {', '.join(IDEA_SOURCES)}")
    check(scope, primary)
    _check_text(text, category)
    check_optional_text(why, "why")
    target = namespace_store.shadow_of(primary, "ideas")
    embedder, vector = embed_text(embedder, text)
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        existing = memory_store.find_by_hash(conn, primary, text)
        if existing is None:
            existing = memory_store.find_by_hash(conn, target, text)
        verdict = None
        unjudged = "close to a known memory and no judge was given: staged unjudged for review"
        if existing is not None:
            pass
        elif embedder.name != gate.THRESHOLDS.model:
            # Cosine thresholds do not carry over between models; the review gate decides.
            unjudged = (f"the dedup gate is calibrated for {gate.THRESHOLDS.model}, not "
                        f"{embedder.name}: staged unjudged for review")
        else:
            verdict = _gate(conn, text, primary, embedder, vector, llm)
            if verdict is not None and not verdict.accepted:
                known = verdict.neighbour.memory_id if verdict.neighbour else None
                assert known is not None  # only batch entries lack an id; there is no batch
                row = memory_store.get_memory(conn, known)
                assert row is not None
                return {**row, "created": False, "verdict": verdict.verdict,
                        "reason": verdict.reason}
        with conn.transaction():
            if existing is None:  # checked again: a concurrent add of the same text
                existing = (memory_store.find_by_hash(conn, primary, text)
                            or memory_store.find_by_hash(conn, target, text))
            if existing is not None:
                memory_id, created = existing, False
            else:
                labelled = memories.label(conn, target, text, category, topic)
                memory_id, created = memory_store.add_memory(
                    conn, namespace=target, text=text, category=labelled.category,
                    source=source, review="pending", why=why, actor=actor,
                    topic=labelled.topic, verdict=verdict.verdict if verdict else None)
                memory_embeddings.write_memory_embeddings(conn, embedder.name, embedder.dims,
                                                          [(memory_id, vector)])
        row = memory_store.get_memory(conn, memory_id)
    assert row is not None
    if not created:
        return {**row, "created": False, "verdict": "duplicate",
                "reason": "the same text is already in the vault"}
    reason = verdict.reason if verdict else unjudged
    return {**row, "created": True, "reason": reason}


def _gate(conn, text: str, primary: str, embedder: Embedder, vector,
          llm: LLM | None) -> gate.Verdict | None:
    """The dedup gate's verdict on an idea; None when it needs a judge and none is given."""
    found = gate.screen(conn, text, primary, embedder=embedder, vector=vector)
    if isinstance(found, gate.Verdict):
        return found
    return gate.judge(llm, text, found.to_judge) if llm is not None else None


def edit(db: Database, scope: Scope, memory_id: int, *, actor: str, text: str | None = None,
         category: str | None = None, embedder: Embedder | None = None,
         topic: str | None = None) -> dict:
    """Edit text, category and/or topic (audit action 'edit', before and after). A new text
    is re-embedded. Editing an archived memory is a Conflict; an edit that changes nothing
    writes nothing (changed=False)."""
    if text is None and category is None and topic is None:
        raise ValueError("give a new text, category or topic")
    if text is not None:
        _check_text(text, category)
    elif category is not None and category not in memory_store.CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of "
                         f"{', '.join(memory_store.CATEGORIES)}")
    if topic is not None:
        topic = slugify(topic)
    vector = None
    if text is not None:
        # Embed before writing (outside the row lock): a model that fails changes nothing.
        embedder, vector = embed_text(embedder, text)
    with db.connect() as conn:
        if vector is not None:
            memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        with conn.transaction():
            locked = memory_store.lock_memory(conn, memory_id)
            if locked is None or not scope.permits(locked[0]["namespace"]):
                raise NotFound(f"no memory with id {memory_id}")
            current, before = locked
            _check_agent_change(scope, current["namespace"], memory_id)
            if current["status"] != "active":
                raise Conflict(f"memory {memory_id} is {current['status']}; it cannot be "
                               f"edited")
            changes = {}
            if text is not None and (memory_store.normalize_text(text)
                                     != memory_store.normalize_text(current["text"])):
                changes["text"] = text
            if category is not None and category != current["category"]:
                changes["category"] = category
            if topic is not None and topic != current["topic"]:
                changes["topic"] = topic
            if not changes:
                return {**current, "changed": False}
            row = memory_store.update_memory(conn, memory_id, changes=changes, action="edit",
                                             actor=actor, before=before)
            if "text" in changes:
                memory_embeddings.write_memory_embeddings(conn, embedder.name, embedder.dims,
                                                          [(memory_id, vector)])
    return {**row, "changed": True}


def archive(db: Database, scope: Scope, memory_id: int, *, actor: str) -> dict:
    """Archive a memory (audit action 'archive'); it is never deleted. Archiving an
    archived memory changes nothing (changed=False)."""
    return _set_status(db, scope, memory_id, "archived", action="archive", actor=actor)


def restore(db: Database, scope: Scope, memory_id: int, *, actor: str) -> dict:
    """Make an archived memory active again (audit action 'restore'). Restoring an active
    memory changes nothing (changed=False); restoring one whose text an active memory of
    its namespace already states is a Conflict (the same text is there once)."""
    return _set_status(db, scope, memory_id, "active", action="restore", actor=actor)


def _set_status(db: Database, scope: Scope, memory_id: int, status: str, *, action: str,
                actor: str) -> dict:
    with db.connect() as conn:
        with conn.transaction():
            locked = memory_store.lock_memory(conn, memory_id)
            if locked is None or not scope.permits(locked[0]["namespace"]):
                raise NotFound(f"no memory with id {memory_id}")
            current, before = locked
            if current["status"] in ("cut", "purged"):
                # The curator's tombstone pairs with its archive: only the curator's
                # restore (or its purge) may change it.
                raise Conflict(f"memory {memory_id} was cut by the curator"
                               + (f"; `memory-platform curator restore {memory_id}` brings "
                                  f"it back within its window" if current["status"] == "cut"
                                  else " and purged"))
            _check_agent_change(scope, current["namespace"], memory_id)
            if current["status"] == status:
                return {**current, "changed": False}
            if status == "active":
                twin = memory_store.find_by_hash(conn, current["namespace"], current["text"])
                if twin is not None:
                    raise Conflict(f"memory {twin} in {current['namespace']} already states "
                                   f"this; memory {memory_id} stays archived")
            row = memory_store.update_memory(conn, memory_id, changes={"status": status},
                                             action=action, actor=actor, before=before)
    return {**row, "changed": True}


def search(db: Database, scope: Scope, query: str, *, namespace: str | None = None,
           k: int = 10, embedder: Embedder | None = None,
           include_superseded: bool = False) -> dict:
    """Memories nearest to `query` by meaning plus those containing it verbatim, within the
    scope: {query, namespaces, hits}. Without `namespace`, every primary namespace in
    scope; a shadow namespace in scope can be named to search what waits for review.
    Facts that stopped being true are left out unless `include_superseded`."""
    check_text(query, "query")
    if not query.strip():
        raise ValueError("search needs a query")
    if not 1 <= k <= 100:
        raise ValueError("k must be between 1 and 100")
    embedder, vector = embed_text(embedder, query)
    with db.connect() as conn:
        if namespace is not None:
            _require(conn, scope, namespace)
            searched = [namespace]
        else:
            searched = visible_primaries(conn, scope)
    hits = memories.search_namespaces(db, embedder, vector, query, searched, k,
                                      include_superseded=include_superseded)
    # Defence in depth: nothing outside the scope leaves, whatever the SQL returned.
    hits = [h for h in hits if scope.permits(h["namespace"])]
    with db.connect() as conn:  # a hit does not carry the flag: asked of the rows found
        sensitive = memory_store.sensitive_ids(conn, [h["id"] for h in hits])
    hits = [shown({**h, "sensitive": h["id"] in sensitive}) for h in hits]
    return {"query": query, "namespaces": searched, "hits": hits}
