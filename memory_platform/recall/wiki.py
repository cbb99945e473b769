"""The markdown wiki of a primary namespace: `$MEMORY_PLATFORM_HOME/wiki/<namespace>/`.

    INDEX.md              the topics, one line each, and the standing facts (< 200 lines)
    topics/<topic>.md     current facts, then a "History" section of superseded ones
    episodes/<YYYY-MM>.md episodes (category `episode`) by month, dated, unsorted

Every memory is one line, its id and dates in a suffix the intake (intake.py) reads back:

    - The acme API runs on port 8080 _(since 2026-03-04; [#42](http://127.0.0.1:8000/vault/memories/42))_

The output is deterministic (same vault, same bytes: no build time, fixed orders), and
`build` never overwrites a file a person changed since it was last written: it compares
each file with the sha256 recorded when it was written (table `wiki_files`) and leaves a
changed file to the intake (`sync` runs the intake first). Sensitive memories are left out
unless MEMORY_PLATFORM_WIKI_SENSITIVE is set.

The folder is read and written through `confined.Root` with symlinks refused: a symlink
in the wiki (to a file or a folder, inside or out), a FIFO, a device or a file over
MAX_FILE_BYTES is never read nor written through (`read_folder` lists it as refused, the
intake reports it, the build holds it), and every write replaces its file atomically inside
the wiki folder.
"""

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.confined import REFUSE, Refused, Root, read_bytes
from memory_platform.privacy.egress import outgoing
from memory_platform.privacy.personal import is_sensitive
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.store import recall as store
from memory_platform.vault.topics import UNSORTED

INDEX = "INDEX.md"
INDEX_MAX_LINES = 199
STANDING = ("feedback", "user", "decision")
MEMORY_URL = "http://127.0.0.1:8000/vault/memories/{id}"  # REST: the row and its provenance
HISTORY_HEADING = "## History"
NOTE = ("<!-- Generated from the vault by memory-platform. Edit a fact's text, delete its "
        "line, or add a line \"- new fact\": the next sync takes it into the vault, audited. "
        "Keep the _(...)_ suffix of a line as it is. -->")
LINE_RE = re.compile(r"^- (?P<text>.+?) _\((?P<meta>[^()]*); \[#(?P<id>\d+)\]\([^()\s]*\)\)_$")


OTHER = "_other"  # key of `lines` holding the file's other lines (headings, links, notes)
# A wiki file is read whole; the build writes far less (a topic of 20,000 facts is ~4 MB).
MAX_FILE_BYTES = 16 << 20


@dataclass
class Rendered:
    """A file's bytes and what the intake compares an edit with: `lines` maps each memory
    id on it to {text, editable}, and OTHER to the file's other lines."""

    text: str
    lines: dict[str, dict | list] = field(default_factory=dict)

    @property
    def data(self) -> bytes:
        return self.text.encode("utf-8")

    def finish(self, body: list[str]) -> "Rendered":
        self.text = "\n".join(body) + "\n"
        self.lines[OTHER] = sorted({line for line in body if not LINE_RE.match(line)})
        return self


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def wiki_dir(namespace: str, home: Path | None = None) -> Path:
    return (home or load_settings().home) / "wiki" / namespace


def _day(value) -> str:
    return value.strftime("%Y-%m-%d")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def memory_line(m: dict, *, history: bool = False) -> str:
    if history:
        end = _day(m["valid_to"]) if m["valid_to"] else "?"
        by = f", superseded by #{m['superseded_by']}" if m["superseded_by"] else ""
        meta = f"{_day(m['valid_from'])} – {end}{by}"
    elif m["category"] == "episode":
        meta = f"on {_day(m['valid_from'])}"
    else:
        meta = f"since {_day(m['valid_from'])}"
    url = MEMORY_URL.format(id=m["id"])
    return f"- {_one_line(m['text'])} _({meta}; [#{m['id']}]({url}))_"


def _current(m: dict) -> bool:
    return m["valid_to"] is None and m["superseded_by"] is None


def _order(m: dict) -> tuple:
    return (m["valid_from"], m["id"])


def _may_show(m: dict, include_sensitive: bool) -> bool:
    """The wiki's egress rule (privacy.egress, from the text as well as the stored flag: a
    pattern may be newer than the row): a memory holding a credential is never written; one
    holding personal data only with the wiki_sensitive setting. Left out rather than masked:
    a masked line edited by a person would come back as an edit of the memory."""
    if outgoing(m["text"]) != m["text"]:
        return False
    return include_sensitive or not (m["sensitive"] or is_sensitive(m["text"]))


def render(namespace: str, memories: list[dict], *, include_sensitive: bool = False
           ) -> dict[str, Rendered]:
    """path -> Rendered for every file of the namespace's wiki. Pure: same input, same
    bytes."""
    shown = [m for m in memories if _may_show(m, include_sensitive)]
    topics: dict[str, list[dict]] = defaultdict(list)
    history: dict[str, list[dict]] = defaultdict(list)
    episodes: dict[str, list[dict]] = defaultdict(list)
    for m in shown:
        topic = m["topic"] or UNSORTED
        if not _current(m):
            history[topic].append(m)
        elif m["category"] == "episode":
            episodes[_day(m["valid_from"])[:7]].append(m)
        else:
            topics[topic].append(m)
    files: dict[str, Rendered] = {}
    for topic in sorted(set(topics) | set(history)):
        out = Rendered("")
        body = [f"# {namespace}: {topic}", "", NOTE, ""]
        for m in sorted(topics[topic], key=_order):
            body.append(memory_line(m))
            out.lines[str(m["id"])] = {"text": _one_line(m["text"]), "editable": True}
        if history[topic]:
            body += ["", HISTORY_HEADING, ""]
            for m in sorted(history[topic], key=_order):
                body.append(memory_line(m, history=True))
                out.lines[str(m["id"])] = {"text": _one_line(m["text"]), "editable": False}
        files[f"topics/{topic}.md"] = out.finish(body)
    for month in sorted(episodes):
        out = Rendered("")
        body = [f"# {namespace}: episodes of {month}", "", NOTE, ""]
        for m in sorted(episodes[month], key=_order):
            body.append(memory_line(m))
            out.lines[str(m["id"])] = {"text": _one_line(m["text"]), "editable": True}
        files[f"episodes/{month}.md"] = out.finish(body)
    files[INDEX] = _index(namespace, topics, episodes, shown)
    return files


def _index(namespace: str, topics: dict, episodes: dict, shown: list[dict]) -> Rendered:
    """Topics one line each, then the standing facts, within INDEX_MAX_LINES lines."""
    out = Rendered("")
    body = [f"# {namespace}", "", NOTE, "", "## Topics", ""]
    by_size = sorted(topics, key=lambda t: (-len(topics[t]), t))
    room = INDEX_MAX_LINES - 20  # leave room for the episodes line and standing facts
    listed = sorted(by_size[:room])
    body += [f"- [{t}](topics/{t}.md): {len(topics[t])} fact(s)" for t in listed]
    if len(by_size) > len(listed):
        body.append(f"- … and {len(by_size) - len(listed)} smaller topics in topics/")
    if episodes:
        body += ["", "## Episodes", "",
                 "- " + ", ".join(f"[{m}](episodes/{m}.md)" for m in sorted(episodes)[-12:])
                 + (f" (and {len(episodes) - 12} earlier months)" if len(episodes) > 12
                    else "")]
    standing = sorted((m for m in shown if _current(m) and m["category"] in STANDING),
                      key=lambda m: (STANDING.index(m["category"]), m["valid_from"], m["id"]))
    room = INDEX_MAX_LINES - len(body) - 4
    if standing and room > 0:
        body += ["", "## Standing facts", ""]
        for m in standing[:room]:
            body.append(memory_line(m))
            out.lines[str(m["id"])] = {"text": _one_line(m["text"]), "editable": True}
        if len(standing) > room:
            body.append(f"- … {len(standing) - room} more in their topic files")
    return out.finish(body)


@dataclass
class OnDisk:
    """What a namespace's wiki folder holds: `files` (relative path -> bytes) and `refused`
    (relative path -> why it was not read: a symlink, a FIFO, a device, too big)."""

    files: dict[str, bytes] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def blocked(self, path: str) -> str | None:
        """Why `path` cannot be read or written: it, or a folder on its way, was refused."""
        parts = path.split("/")
        for i in range(len(parts), 0, -1):
            reason = self.refused.get("/".join(parts[:i]))
            if reason is not None:
                return reason
        return None


def _wiki_file(relative) -> bool:
    return relative.suffix == ".md" and not relative.name.startswith(".")


def read_folder(folder: Path) -> OnDisk:
    """The `*.md` files of a wiki folder (names starting with '.' are left out: the build's
    temporary files), through the confined reader with every symlink refused."""
    disk = OnDisk()
    if not folder.exists():
        return disk
    root = Root(folder, links=REFUSE)
    listing = root.walk(wanted=_wiki_file)
    for skip in listing.skipped:
        disk.refused[Path(skip.path).relative_to(root.path).as_posix()] = skip.reason
    for file in listing:
        path = file.relative_to(root.path).as_posix()
        try:
            disk.files[path] = read_bytes(file, MAX_FILE_BYTES)
        except FileNotFoundError:
            continue  # deleted while read: the next sync sees it gone
        except Refused as exc:
            disk.refused[path] = exc.reason
    return disk


@dataclass
class BuildReport:
    namespace: str
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # changed by a person, not taken in
    removed: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # held: not a file we may write

    def as_dict(self) -> dict:
        return {"namespace": self.namespace, "written": len(self.written),
                "unchanged": len(self.unchanged), "held": sorted(self.held),
                "removed": sorted(self.removed), "refused": dict(sorted(self.refused.items()))}


def build(db: Database, namespace: str, *, home: Path | None = None,
          hold: set[str] = frozenset()) -> BuildReport:
    """Write the namespace's wiki. A file whose bytes differ from what was last written
    (a person's edit the intake has not taken in) is never overwritten: it is `held`, as
    are the paths in `hold` (files the intake kept for a reported conflict) and the paths
    that are not files the build may write (a symlink, a FIFO, a symlinked folder on the
    way: `refused`). A file of a topic that no longer has memories is removed only if
    nobody changed it."""
    settings = load_settings()
    home = home or settings.home
    folder = wiki_dir(namespace, home)
    with db.connect() as conn:
        memories = store.wiki_memories(conn, namespace)
        written = store.wiki_files(conn, namespace)
    files = render(namespace, memories, include_sensitive=settings.wiki_sensitive)
    report = BuildReport(namespace)
    folder.mkdir(parents=True, exist_ok=True)
    root = Root(folder, links=REFUSE)
    with db.connect() as conn:
        for path in sorted(set(files) | set(written)):
            if path in hold:
                report.held.append(path)
                continue
            try:
                on_disk = root.read(path, MAX_FILE_BYTES)
            except Refused as exc:
                report.held.append(path)
                report.refused[path] = exc.reason
                continue
            recorded = written.get(path)
            changed = on_disk is not None and (recorded is None
                                               or sha256(on_disk) != recorded["sha256"])
            if changed:
                report.held.append(path)
                continue
            if path not in files:  # nothing left for this file, and nobody changed it
                if on_disk is not None:
                    root.remove(path)
                store.forget_wiki_file(conn, namespace, path)
                report.removed.append(path)
                continue
            new = files[path]
            if on_disk == new.data and recorded and recorded["lines"] == new.lines:
                report.unchanged.append(path)
                continue
            try:
                root.write(path, new.data)
            except Refused as exc:  # a folder on the way turned into a symlink since
                report.held.append(path)
                report.refused[path] = exc.reason
                continue
            store.record_wiki_file(conn, namespace, path, sha256(new.data), new.lines)
            report.written.append(path)
    return report


def dirty_files(db: Database, namespace: str, *, home: Path | None = None) -> list[str]:
    """Paths of the namespace's wiki whose bytes differ from what the build last wrote,
    that appeared (a person's new file), that are gone, or that cannot be read (a
    symlink, a FIFO...: the intake reports them): what the sensor watches. Never blocks."""
    folder = wiki_dir(namespace, home)
    with db.connect() as conn:
        written = store.wiki_files(conn, namespace)
    disk = read_folder(folder)
    dirty = [path for path in sorted(set(written) | set(disk.files) | set(disk.refused))
             if path in disk.refused or path not in disk.files or path not in written
             or sha256(disk.files[path]) != written[path]["sha256"]]
    return dirty


def vault_fingerprints(db: Database) -> dict[str, int]:
    """Per primary namespace, the latest audit id of its memories: it moves with every
    change to the namespace, whichever face or job made it."""
    with db.connect() as conn:
        return store.vault_fingerprints(conn)
