"""People's edits to the wiki, taken back into the vault (the other half of wiki.py).

For each file whose bytes differ from what the wiki last wrote (`wiki_files.sha256`):
- a memory line whose text changed -> an audited hand edit of that memory (actor
  `wiki:<path>`), re-embedded;
- a memory line deleted -> the memory is archived (never deleted; restorable);
- a new line `- some fact` in a topic or episodes file, or under the index's standing
  facts -> a new memory (a person's, source 'hand') with that file's topic;
- anything else is *not guessed*: an edited line of the History section, a line whose id
  belongs to another file, a damaged suffix, prose, an edit of a memory the vault changed
  since the file was written, a whole file deleted. Each becomes a finding at the review
  gate (kind `unmapped_edit` or `wiki_conflict`, with the file, line and text), and the
  file is kept as the person left it until they fix it or resolve the finding: a rebuild
  never clobbers an edit that was not taken in.

    sync(db, "acme") -> {"intake": {...}, "build": {...}}
"""

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.recall.wiki import (
    HISTORY_HEADING,
    INDEX,
    LINE_RE,
    OTHER,
    build,
    sha256,
    wiki_dir,
)
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as store
from memory_platform.vault import service as access
from memory_platform.vault.memories import vault_embedder
from memory_platform.vault.tokens import Scope
from memory_platform.vault.topics import UNSORTED, slugify

ACTOR_PREFIX = "wiki:"


@dataclass
class IntakeReport:
    namespace: str
    edited: list[int] = field(default_factory=list)
    archived: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    reported: list[int] = field(default_factory=list)  # finding ids
    held: set[str] = field(default_factory=set)  # files kept as the person left them
    restored: list[str] = field(default_factory=list)  # files deleted whole: rewritten

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "edited": self.edited, "archived": self.archived,
                "added": self.added, "findings": self.reported, "held": sorted(self.held),
                "restored": self.restored}


def owned(path: str) -> bool:
    """A path the wiki writes: INDEX.md, topics/<slug>.md, episodes/<month>.md. Any other
    file in the folder is a person's own, never read as memories nor touched."""
    parts = path.split("/")
    return path == INDEX or (len(parts) == 2 and parts[0] in ("topics", "episodes")
                             and parts[1].endswith(".md"))


def _file_topic(path: str) -> tuple[str | None, str | None]:
    """(category, topic) a new line in this file gets: a topic file names its topic, an
    episodes file its category; the index leaves both to the rules."""
    if path.startswith("topics/") and path.endswith(".md"):
        try:
            return None, slugify(path[len("topics/"):-3])
        except ValueError:
            return None, None
    if path.startswith("episodes/"):
        return "episode", None
    return None, None


class _Intake:
    def __init__(self, db: Database, namespace: str, report: IntakeReport, embedder):
        self.db, self.namespace, self.report, self.embedder = db, namespace, report, embedder

    def finding(self, path: str, sha: str, kind: str, reason: str, *, line_no: int | None,
                text: str | None, memory_ids=()) -> None:
        evidence = {"file": path, "file_sha256": sha, "line": line_no, "text": text,
                    "reason": reason}
        key = json.dumps([self.namespace, kind, path, sha, line_no, reason], sort_keys=True)
        with self.db.connect() as conn:
            found = store.insert_finding(
                conn, namespace=self.namespace, kind=kind, memory_ids=list(memory_ids),
                evidence=evidence, fingerprint=hashlib.sha256(key.encode()).hexdigest(),
                run_id=None)
            open_ = store.findings(conn, namespaces=[self.namespace], status="open",
                                   kinds=[kind])
        if found is not None:
            self.report.reported.append(found)
        # The file is held while a finding about this version of it is open.
        if found is not None or any(f["evidence"].get("file") == path
                                    and f["evidence"].get("file_sha256") == sha
                                    for f in open_):
            self.report.held.add(path)

    def file(self, path: str, data: bytes, recorded: dict | None) -> None:
        sha = sha256(data)
        if not owned(path):
            self.finding(path, sha, "unmapped_edit", "a file the wiki does not write: its "
                         "lines are not read as memories, and it is left alone",
                         line_no=None, text=None)
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.finding(path, sha, "unmapped_edit", f"not UTF-8 text ({exc})", line_no=None,
                         text=None)
            return
        written = (recorded or {}).get("lines", {})
        known_other = set(written.get(OTHER, []))
        seen: set[str] = set()
        in_history = False
        category, topic = _file_topic(path)
        editable = path != INDEX  # in the index, only the standing facts take new lines
        for no, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            match = LINE_RE.match(stripped)
            if match:
                self.memory_line(path, sha, no, match, written, seen, in_history)
                continue
            if stripped.startswith("## "):
                in_history = stripped == HISTORY_HEADING
                editable = path != INDEX or stripped == "## Standing facts"
            if not stripped or line in known_other:
                continue
            if stripped.startswith("- ") and "[#" not in stripped and editable \
                    and not in_history:
                self.addition(path, sha, no, stripped[2:].strip(), category, topic)
                continue
            why = ("an edit in the History section" if in_history else
                   "a damaged memory line (its _(...)_ suffix was changed)"
                   if "[#" in stripped else "a line the wiki did not write and cannot map "
                   "to a memory (headings, links and notes are regenerated)")
            self.finding(path, sha, "unmapped_edit", why, line_no=no, text=line)
        for memory_id, before in sorted(((k, v) for k, v in written.items() if k.isdigit()),
                                        key=lambda kv: int(kv[0])):
            if memory_id not in seen and before.get("editable"):
                self.archive(path, sha, int(memory_id))

    def memory_line(self, path, sha, no, match, written, seen, in_history) -> None:
        memory_id, new_text = match.group("id"), match.group("text").strip()
        before = written.get(memory_id)
        if before is None or memory_id in seen:
            why = ("a memory line repeated in the file" if memory_id in seen else
                   f"memory #{memory_id} was not written to this file")
            self.finding(path, sha, "unmapped_edit", why, line_no=no, text=match.group(0),
                         memory_ids=[int(memory_id)])
            return
        seen.add(memory_id)
        if new_text == before["text"]:
            return
        if in_history or not before.get("editable"):
            self.finding(path, sha, "unmapped_edit", "an edit of a superseded fact",
                         line_no=no, text=match.group(0), memory_ids=[int(memory_id)])
            return
        with self.db.connect() as conn:
            current = memory_store.get_memory(conn, int(memory_id))
        now = memory_store.normalize_text(current["text"]) if current else None
        if now == new_text:
            return  # taken in by an earlier sync (the file was held for another line)
        if now != before["text"]:
            self.finding(path, sha, "wiki_conflict",
                         "the vault changed this memory since the file was written",
                         line_no=no, text=match.group(0), memory_ids=[int(memory_id)])
            return
        try:
            done = access.edit(self.db, Scope.everything(), int(memory_id),
                               actor=ACTOR_PREFIX + path, text=new_text,
                               embedder=self.embedder)
        except (ValueError, access.Conflict, access.NotFound) as exc:
            self.finding(path, sha, "unmapped_edit", f"refused: {exc}", line_no=no,
                         text=match.group(0), memory_ids=[int(memory_id)])
            return
        if done["changed"]:
            self.report.edited.append(int(memory_id))

    def addition(self, path, sha, no, text, category, topic) -> None:
        try:
            row = access.add(self.db, Scope.everything(), self.namespace, text, category,
                             actor=ACTOR_PREFIX + path, embedder=self.embedder,
                             topic=topic if topic != UNSORTED else None)
        except (ValueError, access.Forbidden) as exc:
            self.finding(path, sha, "unmapped_edit", f"refused: {exc}", line_no=no,
                         text=f"- {text}")
            return
        if row["created"]:
            self.report.added.append(row["id"])

    def archive(self, path, sha, memory_id: int) -> None:
        try:
            done = access.archive(self.db, Scope.everything(), memory_id,
                                  actor=ACTOR_PREFIX + path)
        except access.NotFound as exc:
            self.finding(path, sha, "unmapped_edit", f"deleted line: {exc}", line_no=None,
                         text=None, memory_ids=[memory_id])
            return
        if done["changed"]:
            self.report.archived.append(memory_id)


def take_in(db: Database, namespace: str, *, home: Path | None = None,
            embedder=None) -> IntakeReport:
    """Apply every person's edit to the namespace's wiki files (see the module docstring).
    A file taken in whole is recorded as read (so the build may rewrite it); a file with a
    finding is held as it is."""
    folder = wiki_dir(namespace, home or load_settings().home)
    report = IntakeReport(namespace)
    with db.connect() as conn:
        written = store.wiki_files(conn, namespace)
    on_disk = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*.md"))
               if not p.name.startswith(".")} if folder.exists() else {}
    changed = {path: p.read_bytes() for path, p in on_disk.items()
               if path not in written or sha256(p.read_bytes()) != written[path]["sha256"]}
    report.restored = sorted(set(written) - set(on_disk))
    if not changed:
        return report
    intake = _Intake(db, namespace, report, embedder or vault_embedder())
    for path, data in changed.items():
        intake.file(path, data, written.get(path))
        if path not in report.held and owned(path):
            # Taken in: record these bytes as read, so the build may now rewrite the file.
            with db.connect() as conn:
                store.record_wiki_file(conn, namespace, path, sha256(data),
                                       (written.get(path) or {}).get("lines", {}))
    return report


def sync(db: Database, namespace: str, *, home: Path | None = None, embedder=None) -> dict:
    """Take people's edits in, then rebuild: what the wiki asset and `wiki sync` run."""
    intake = take_in(db, namespace, home=home, embedder=embedder)
    built = build(db, namespace, home=home, hold=intake.held)
    return {"intake": intake.as_dict(), "build": built.as_dict()}
