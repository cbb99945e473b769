"""Staging what the parsers read: every Record becomes a suggestion in `<ns>__ideas` through
`vault.service.add_idea` (source `import`, review pending, the dedup gate, the vault's text
rules), with its provenance as `why`. Nothing here writes a primary namespace.

    result = stage(db, mem0.read(path), "work", actor="cli:alice", tool="mem0")
    result.staged     # ids of the new entries waiting for review
    result.known      # the same text was already in `work` or `work__ideas` (a re-run)
    result.duplicates # the gate found it already known in other words (vector duplicate)
    result.problems   # "file:line: why", one per record or file that was not staged
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from memory_platform.llm import LLM
from memory_platform.progress import Tracker
from memory_platform.query.embeddings import Embedder
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import memories as vault_memories
from memory_platform.vault import service
from memory_platform.vault.imports.records import TOOLS, Note, Problem, Record
from memory_platform.vault.tokens import Scope

SOURCE = "import"


@dataclass
class ImportResult:
    tool: str
    namespace: str  # the ideas namespace entries were staged in
    read: int = 0
    staged: list[int] = field(default_factory=list)
    known: int = 0
    duplicates: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"tool": self.tool, "namespace": self.namespace, "read": self.read,
                "staged": len(self.staged), "staged_ids": self.staged, "known": self.known,
                "duplicates": self.duplicates, "problems": self.problems,
                "notes": self.notes}


def target(namespace: str) -> tuple[str, str]:
    """(primary, ideas namespace) for the namespace named; ValueError for a dream shadow or
    an invalid name (before any file is read)."""
    kind, primary = namespace_store.parse_namespace(namespace)
    if kind == "dream":
        raise ValueError(f"{namespace!r} holds the dream's output; imported memories are "
                         f"staged in <namespace>__ideas")
    primary = namespace if kind == "primary" else primary
    assert primary is not None
    return primary, namespace_store.shadow_of(primary, "ideas")


def _known(db: Database, text: str, primary: str, ideas: str) -> bool:
    """The same text is already in the primary namespace or waits in its ideas (the first
    check add_idea makes, made before the text is embedded)."""
    with db.connect() as conn:
        return any(memory_store.find_by_hash(conn, ns, text) is not None
                   for ns in (primary, ideas))


def stage(db: Database, items: Iterable[Record | Problem | Note], namespace: str, *,
          actor: str, tool: str, embedder: Embedder | None = None, llm: LLM | None = None,
          scope: Scope | None = None, progress: Callable[[str], None] | None = None
          ) -> ImportResult:
    """Stage every Record of `items` for review in `<namespace>__ideas` (see the module
    docstring); Problems and Notes are collected as they come. A record the vault refuses
    (a credential, too long, a NUL) is a problem with its file and line; the rest go on."""
    if tool not in TOOLS:
        raise ValueError(f"unknown tool {tool!r}; use one of {', '.join(TOOLS)}")
    primary, ideas = target(namespace)
    scope = scope or Scope.everything()
    service.check(scope, primary)
    result = ImportResult(tool=tool, namespace=ideas)
    embedder = embedder or vault_memories.vault_embedder()
    items = list(items)  # parsed whole first (files are capped): the progress has a total
    tracker = Tracker(f"staging {tool} memories in {ideas}", "records",
                      sum(isinstance(i, Record) for i in items), report=progress)
    for item in items:
        if isinstance(item, Problem):
            result.problems.append(str(item))
            continue
        if isinstance(item, Note):
            result.notes.append(str(item))
            continue
        result.read += 1
        if _known(db, item.text, primary, ideas):  # a re-run: no embedding, no gate
            result.known += 1
            tracker.advance(1)
            continue
        try:
            row = service.add_idea(db, scope, primary, item.text, item.category, actor=actor,
                                   why=item.provenance(), embedder=embedder, llm=llm,
                                   source=SOURCE)
        except ValueError as exc:  # InvalidInput, TooLong, a credential, a bad category
            result.problems.append(f"{item.location()}: not staged: {exc}")
            tracker.advance(1)
            continue
        if row["created"]:
            result.staged.append(int(row["id"]))
        elif row["content_hash"] == memory_store.content_hash(item.text):
            result.known += 1
        else:
            result.duplicates += 1
        tracker.advance(1)
    tracker.finish()
    return result
