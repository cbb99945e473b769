"""still, last step: stage the candidates the dedup gate let through into shadow namespaces.

Only `<namespace>__dream` is ever written here, and the database itself refuses a dream row
in a primary namespace (a CHECK on memories). Each staged memory carries its provenance
(run, candidate, source turns, score, why, verdict) and its vector, so the next dream's
dedup gate finds it. Staging is idempotent on the candidate id.
"""

from datetime import date

from memory_platform.query.embeddings import Embedder
from memory_platform.store import Database, memory_embeddings
from memory_platform.store import dream as store
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault.memories import label, vault_embedder


def stage_day(db: Database, day: date, *, run_id: str, embedder: Embedder | None = None) -> dict:
    """Stage the day's accepted, not yet staged candidates. Returns counts and the staged ids."""
    with db.connect() as conn:
        rows = store.accepted_unstaged(conn, day)
        if not rows:
            return {"staged": 0, "already_staged": 0, "memory_ids": [], "by_namespace": {}}
        embedder = embedder or vault_embedder()
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        vectors = embedder.embed([row["text"] for row in rows])
        staged, already, ids, by_namespace = 0, 0, [], {}
        for row, vector in zip(rows, vectors, strict=True):
            namespace = namespace_store.shadow_of(row["namespace"], "dream")
            with conn.transaction():
                # The model's category and topic; the rules choose a topic it did not give.
                labelled = label(conn, namespace, row["text"], row["category"], row["topic"])
                memory_id, created = memory_store.add_memory(
                    conn,
                    namespace=namespace,
                    text=row["text"],
                    category=labelled.category,
                    topic=labelled.topic,
                    source="dream",
                    actor=f"dream:{run_id}",
                    review="pending",
                    dream_run_id=run_id,
                    candidate_id=row["id"],
                    source_event_ids=row["source_event_ids"],
                    score=row["score"],
                    why=row["why"],
                    verdict=row["verdict"],
                    valid_from=row["valid_from"],
                )
                if created:
                    memory_embeddings.write_memory_embeddings(
                        conn, embedder.name, embedder.dims, [(memory_id, vector)]
                    )
            if created:
                staged += 1
                ids.append(memory_id)
                by_namespace[namespace] = by_namespace.get(namespace, 0) + 1
            else:
                already += 1
        return {"staged": staged, "already_staged": already, "memory_ids": ids,
                "by_namespace": by_namespace}
