"""Merges and flagged contradictions, staged for review: never executed by the curator.

Each becomes a pending entry in `<ns>__dream` (source 'dream', the run as its dream run, the
sources named in its `why`), linked to its source memories in `curator_proposals`. The
review gate shows it like any dream entry; approving it promotes the proposed text and
supersedes the sources that are still current (vault/review.py). Staging is idempotent per
(namespace, week, kind, sources).
"""

import logging
from datetime import date

import psycopg

from memory_platform.curator.verdict import Verdict
from memory_platform.privacy.egress import holds_mask
from memory_platform.store import curator_archive as store
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store

KINDS = ("merge", "contradiction")
log = logging.getLogger(__name__)


def stage(conn: psycopg.Connection, *, namespace: str, week: date, curator_run_id: int,
          dagster_run_id: str, verdict: Verdict, memory_ids: list[int]) -> list[int]:
    """Stage the verdict's merges and contradictions (in the caller's transaction); return
    the ids of the entries staged now (an entry staged by an earlier run of the week is not
    staged again)."""
    shadow = namespace_store.shadow_of(namespace, "dream")
    staged: list[int] = []
    for kind, proposals in (("merge", verdict.merges),
                            ("contradiction", verdict.contradictions)):
        for proposal in proposals:
            if holds_mask(proposal.text):
                # written from a listing that masked a credential or a sensitive memory's
                # personal data: approving it would replace the facts with the mask
                log.warning("curator %s of handles %s not staged: its text holds a mask",
                            kind, proposal.handles)
                continue
            sources = sorted(memory_ids[h - 1] for h in proposal.handles)
            if store.find_proposal(conn, namespace=namespace, week=week, kind=kind,
                                   source_memory_ids=sources) is not None:
                continue
            named = ", ".join(f"#{i}" for i in sources)
            verb = ("say one thing" if kind == "merge"
                    else "contradict each other")
            why = (f"curator {kind}: memories {named} {verb}; approving this supersedes "
                   f"them. {proposal.why}")
            first = memory_store.get_memory(conn, sources[0])
            memory_id, _ = memory_store.add_memory(
                conn, namespace=shadow, text=proposal.text,
                category=first["category"] if first else "user",
                topic=first["topic"] if first else None,  # a merge keeps its sources' topic
                source="dream", actor=f"curator:{dagster_run_id}", review="pending",
                dream_run_id=dagster_run_id, why=why, verdict=f"curator_{kind}")
            store.insert_proposal(conn, curator_run_id=curator_run_id, namespace=namespace,
                                  week=week, kind=kind, source_memory_ids=sources,
                                  shadow_memory_id=memory_id)
            staged.append(memory_id)
    return staged
