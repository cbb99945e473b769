"""Categories and topics after the fact: the backfill of memories written before topics
existed, and the LLM fallback for memories the rules (vault/topics.py) were unsure of.

- `backfill`: every memory without a topic gets one from the rules (its category, chosen
  by whoever wrote it, is kept) and its sensitivity checked, audited as action `classify`.
  Idempotent: a second run finds nothing to do.
- `refine_unsorted`: the current memories filed as `episode` / `unsorted` (no rule matched)
  are shown to the LLM with the namespace's topics; a confident answer with a valid
  category and slug is applied (audited), anything else leaves the memory where it is.
  Runs with MEMORY_PLATFORM_CLASSIFIER_LLM set (wiki builds) or `recall classify --llm`.
"""

from typing import Literal

from pydantic import BaseModel, Field

from memory_platform.llm import LLM
from memory_platform.privacy.egress import outgoing
from memory_platform.privacy.personal import sensitivity
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import recall as store
from memory_platform.vault.topics import UNSORTED, classify, slugify

PAGE = 500
MAX_LLM_CALLS = 100  # per namespace and run: a cost bound; the rest wait for the next run
CLASSIFY_PROMPT_VERSION = "classify-2026-12-01"
CLASSIFY_SYSTEM = """\
You file one memory of a person's vault. Answer its category and topic.
Categories: user (about the person), feedback (how the person wants the assistant to
work), project (facts about a project or codebase), reference (where to find things),
decision (what was chosen and why), episode (something that happened on a day).
topic: a short lowercase slug (letters, digits, '-'); reuse one of the existing topics when
it fits. confident: false when you are not sure; an unsure memory stays unsorted.
"""


class TopicAnswer(BaseModel):
    category: Literal["user", "feedback", "project", "reference", "decision", "episode"]
    topic: str = Field(min_length=1, max_length=48)
    confident: bool


def _apply(conn, memory_id: int, changes: dict, actor: str) -> bool:
    with conn.transaction():
        locked = memory_store.lock_memory(conn, memory_id)
        if locked is None:
            return False
        current, before = locked
        changes = {k: v for k, v in changes.items() if current[k] != v}
        if not changes:
            return False
        memory_store.update_memory(conn, memory_id, changes=changes, action="classify",
                                   actor=actor, before=before)
    return True


def backfill(db: Database, *, actor: str = "recall:backfill") -> dict:
    """Topics (and sensitivity) for every memory written before topics existed."""
    classified, marked = 0, 0
    with db.connect() as conn:
        after = 0
        while True:
            rows = store.unclassified(conn, after_id=after, limit=PAGE)
            if not rows:
                break
            after = rows[-1]["id"]
            for m in rows:
                kinds = sensitivity(m["text"])
                if bool(kinds) != m["sensitive"]:
                    store.set_sensitivity(conn, m["id"], kinds)
                    marked += 1
                kind, primary = namespace_store.parse_namespace(m["namespace"])
                known = store.namespace_topics(conn, m["namespace"] if kind == "primary"
                                               else primary)
                label = classify(m["text"], category=m["category"], known_topics=known)
                classified += _apply(conn, m["id"], {"topic": label.topic}, actor)
    return {"classified": classified, "marked_sensitive": marked}


def _prompt(text: str, topics: list[str]) -> str:
    shown = ", ".join(topics[:80]) or "none yet"
    return f"Existing topics: {shown}\n\nMemory: {text}\n\nIts category and topic?"


def refine_unsorted(db: Database, llm: LLM, namespace: str, *,
                    actor: str = "recall:classifier") -> dict:
    """Ask the LLM about the namespace's unsorted episodes (see the module docstring)."""
    with db.connect() as conn:
        rows = store.unsorted_current(conn, namespace, UNSORTED)
        topics = [t for t in store.namespace_topics(conn, namespace) if t != UNSORTED]
    moved, kept, calls = 0, 0, 0
    for m in rows[:MAX_LLM_CALLS]:
        # egress: credentials masked, personal data too for a sensitive memory (the topic
        # does not need the address)
        shown = outgoing(m["text"], personal=bool(m["sensitive"]))
        answer = llm.complete(_prompt(shown, topics), system=CLASSIFY_SYSTEM,
                              schema=TopicAnswer, max_tokens=200,
                              purpose="recall-classify").parsed
        calls += 1
        try:
            topic = slugify(answer.topic) if answer is not None else None
        except ValueError:
            topic = None
        if answer is None or not answer.confident or topic in (None, UNSORTED):
            kept += 1
            continue
        with db.connect() as conn:
            moved += _apply(conn, m["id"], {"category": answer.category, "topic": topic},
                            actor)
        if topic not in topics:
            topics.append(topic)
    return {"namespace": namespace, "unsorted": len(rows), "llm_calls": calls,
            "moved": moved, "kept": kept, "waiting": max(0, len(rows) - MAX_LLM_CALLS),
            "prompt_version": CLASSIFY_PROMPT_VERSION}
