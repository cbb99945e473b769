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

The wiki folder is the user's, so its content is not trusted: it is read through the
confined reader (wiki.read_folder: a symlink, a FIFO, a device or a file over
wiki.MAX_FILE_BYTES is not read, a finding says so, and the path is held, never written
through), a line with a NUL byte or over MAX_LINE_CHARS is reported and not taken in (the
other lines are), a finding keeps at most MAX_FINDING_TEXT characters of its line, and a
file gets at most MAX_FINDINGS_PER_FILE findings, then one for the rest of its lines. A
file whose exact bytes already have an open finding is held without reading it again, so
a file of junk costs its first sync only.

    sync(db, "acme") -> {"intake": {...}, "build": {...}}
"""

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.recall.wiki import (
    HISTORY_HEADING,
    INDEX,
    LINE_RE,
    OTHER,
    build,
    read_folder,
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
MAX_LINE_CHARS = 5_000  # a memory holds at most 4,000 characters, plus the line's suffix
MAX_FINDING_TEXT = 500  # characters of a line a finding keeps
MAX_FINDINGS_PER_FILE = 50  # then one finding for the rest of the file's lines
_IDS = re.compile(r"\[#(\d+)\]")


def _cut(text: str | None) -> str | None:
    """A line as a finding keeps it: no NUL (PostgreSQL holds none), at most
    MAX_FINDING_TEXT characters, and said so when cut."""
    if text is None:
        return None
    text = text.replace("\x00", "\ufffd")
    if len(text) <= MAX_FINDING_TEXT:
        return text
    return f"{text[:MAX_FINDING_TEXT]}… [cut: {len(text):,} characters in all]"


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
    def __init__(self, db: Database, namespace: str, report: IntakeReport, embedder,
                 reported: set[tuple[str, str]]):
        self.db, self.namespace, self.report, self._embedder = db, namespace, report, embedder
        self.reported = reported  # (file, sha256) of the open findings
        self.per_file: dict[str, int] = {}
        self.overflow: dict[str, list[int]] = {}

    @property
    def embedder(self):
        """Loaded on the first edit or addition (a sync that only reports needs none)."""
        if self._embedder is None:
            self._embedder = vault_embedder()
        return self._embedder

    def finding(self, path: str, sha: str, kind: str, reason: str, *, line_no: int | None,
                text: str | None, memory_ids=()) -> None:
        count = self.per_file.get(path, 0)
        if count >= MAX_FINDINGS_PER_FILE and line_no is not None:
            self.overflow.setdefault(path, []).append(line_no)
            return
        self.per_file[path] = count + 1
        evidence = {"file": path, "file_sha256": sha, "line": line_no, "text": _cut(text),
                    "reason": reason}
        key = json.dumps([self.namespace, kind, path, sha, line_no, reason], sort_keys=True)
        with self.db.connect() as conn:
            found = store.insert_finding(
                conn, namespace=self.namespace, kind=kind, memory_ids=list(memory_ids),
                evidence=evidence, fingerprint=hashlib.sha256(key.encode()).hexdigest(),
                run_id=None)
        if found is not None:
            self.report.reported.append(found)
        # The file is held while a finding about this version of it is open.
        if found is not None or (path, sha) in self.reported:
            self.report.held.add(path)

    def rest(self, path: str, sha: str) -> None:
        """One finding for the lines past MAX_FINDINGS_PER_FILE."""
        lines = self.overflow.pop(path, [])
        if lines:
            self.finding(path, sha, "unmapped_edit", f"{len(lines):,} more lines the wiki "
                         f"cannot map, like the ones reported (lines {lines[0]}-{lines[-1]}): "
                         "not taken in either", line_no=None, text=None)

    def refused(self, path: str, reason: str) -> None:
        """A path the confined reader did not read (a symlink, a FIFO, too big)."""
        self.finding(path, sha256(reason.encode()), "unmapped_edit", f"not read: {reason}; "
                     "the wiki reads and writes only its own regular files (replace it with "
                     "a file, or remove it)", line_no=None, text=None)
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
            if "\x00" in line or len(line) > MAX_LINE_CHARS:
                seen.update(_IDS.findall(line))  # its memory is not taken as deleted
                why = ("a NUL byte in the line" if "\x00" in line else
                       f"a line of {len(line):,} characters, over the limit of "
                       f"{MAX_LINE_CHARS:,}")
                self.finding(path, sha, "unmapped_edit", f"{why}: not taken in", line_no=no,
                             text=line)
                continue
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
        self.rest(path, sha)
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
    finding, or one the confined reader refused, is held as it is."""
    folder = wiki_dir(namespace, home or load_settings().home)
    report = IntakeReport(namespace)
    with db.connect() as conn:
        written = store.wiki_files(conn, namespace)
    disk = read_folder(folder)
    changed = {path: data for path, data in disk.files.items()
               if path not in written or sha256(data) != written[path]["sha256"]}
    report.restored = sorted(p for p in set(written) - set(disk.files)
                             if disk.blocked(p) is None)
    report.held |= {p for p in written if disk.blocked(p) is not None}
    if not changed and not disk.refused:
        return report
    with db.connect() as conn:
        reported = {(f["evidence"].get("file"), f["evidence"].get("file_sha256"))
                    for f in store.findings(conn, namespaces=[namespace], status="open",
                                            kinds=["unmapped_edit", "wiki_conflict"])}
    intake = _Intake(db, namespace, report, embedder, reported)
    for path, reason in sorted(disk.refused.items()):
        intake.refused(path, reason)
    for path, data in changed.items():
        if (path, sha256(data)) in reported:
            report.held.add(path)  # this very version was reported and is still open
            continue
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
