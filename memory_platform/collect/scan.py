"""Find what changed in the watched folders and copy its new bytes into the spool.

The folders are those `up` watches (settings.watched_folders: Claude Code's projects, the
inbox, the notes folder) and Codex's sessions (`$CODEX_HOME/sessions`, ~/.codex/sessions),
found by the adapters' own discovery (the inbox: every file, its kind sniffed) and read
through `memory_platform.confined`. A file is resumed by the rule local imports keep
(ingest/importer.py): when its first `sent` bytes still hash to what was sent, only the bytes
after them are read; otherwise (rewritten, truncated, replaced) it is read again from 0 and
the server replaces its copy."""

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.adapters import COMPANION_FILES, UnknownFormat, detect_kind, get_adapter
from memory_platform.collect import wire
from memory_platform.collect.spool import Spool
from memory_platform.confined import open_file, show, walk


@dataclass
class ScanOutcome:
    files: int = 0
    files_changed: int = 0
    chunks: int = 0
    bytes_read: int = 0
    full: bool = False  # the spool had no room: some new bytes were left to read later
    errors: list[str] = field(default_factory=list)


def watched_roots(settings) -> list[tuple[str, str | None, Path]]:
    """(root, kind or None to sniff, folder) for each folder a collector watches."""
    labels = {"claude-code": "claude-code", "notes": "notes"}
    roots: list[tuple[str, str | None, Path]] = []
    for kind, folder in settings.watched_folders():
        if folder == settings.demo:
            continue  # the demo history is `up`'s own, not this machine's
        roots.append((labels[kind] if kind else "inbox", kind, folder))
    codex_home = Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser()
    roots.append(("codex", "codex", codex_home / "sessions"))
    return roots


def file_key(path: str) -> str:
    return hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def _targets(roots, outcome: ScanOutcome) -> Iterator[tuple[str, str | None, Path, Path]]:
    for root, kind, folder in roots:
        if not folder.exists():
            continue
        listing = get_adapter(kind).discover(folder) if kind else walk(folder)
        outcome.errors.extend(f"{skip.path}: not collected: {skip.reason}"
                              for skip in listing.skipped)
        for file in listing:
            if kind is None and (file.name in COMPANION_FILES or file.name.startswith(".")):
                continue
            yield root, kind, folder, file


def spool_changes(roots, files: dict, spool: Spool, save, chunk_bytes: int = wire.CHUNK_BYTES
                  ) -> ScanOutcome:
    """Copy the new bytes of every watched file into the spool, recording in `files` (path
    -> state) what was read; `save()` persists `files` after each file. Stops at a full
    spool."""
    outcome = ScanOutcome()
    for root, kind, folder, file in _targets(roots, outcome):
        outcome.files += 1
        path = str(file)
        entry = files.get(path)
        try:
            st = os.stat(file)
        except OSError:
            continue  # gone since the walk (Claude Code's cleanup)
        if entry and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
            continue
        if kind is None:
            kind = entry.get("kind") if entry and entry.get("size") is not None else None
            if kind is None:
                try:
                    kind = detect_kind(file)
                except UnknownFormat:
                    files[path] = {"kind": None, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                                   "sent": 0, "prefix": None, "key": file_key(path)}
                    continue
                except OSError as exc:
                    outcome.errors.append(f"{show(file)}: cannot read: {exc}")
                    continue
        header = {"root": root, "kind": kind, "rel": file.relative_to(folder).as_posix()
                  if file != folder else file.name, "source_path": path}
        try:
            changed = _spool_file(file, header, entry, files, spool, chunk_bytes, outcome)
        except OSError as exc:
            outcome.errors.append(f"{show(file)}: cannot read: {exc}")
            continue
        outcome.files_changed += changed
        save()
        if outcome.full:
            break
    return outcome


def _spool_file(file: Path, header: dict, entry: dict | None, files: dict, spool: Spool,
                chunk_bytes: int, outcome: ScanOutcome) -> bool:
    path = header["source_path"]
    key = file_key(path)
    with open_file(file) as fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        digest = hashlib.sha256()
        offset = 0
        sent = entry.get("sent", 0) if entry else 0
        if entry and entry.get("prefix") and 0 < sent <= size:
            left = sent
            while left:
                piece = fh.read(min(left, 1 << 20))
                if not piece:
                    break
                digest.update(piece)
                left -= len(piece)
            if not left and digest.hexdigest() == entry["prefix"]:
                offset = sent
            else:
                fh.seek(0)
                digest = hashlib.sha256()
        state = {"kind": header["kind"], "key": key, "sent": offset,
                 "prefix": digest.hexdigest() if offset else None, "size": None,
                 "mtime_ns": None}
        files[path] = state
        wrote = False
        while offset < size or (offset == 0 and size == 0 and not wrote):
            data = fh.read(min(chunk_bytes, size - offset))
            if not data and size:
                break  # shrank while read: what is there is sent; the next scan sees it
            prefix = digest.hexdigest() if offset else None
            digest.update(data)
            end = offset + len(data)
            blob = wire.encode({**header, "offset": offset, "prefix_sha256": prefix,
                                "through_sha256": digest.hexdigest(),
                                "complete": end >= size}, data)
            if not spool.add(key, blob):
                outcome.full = True
                return wrote
            wrote = True
            outcome.chunks += 1
            outcome.bytes_read += len(data)
            offset = end
            state.update(sent=offset, prefix=digest.hexdigest())
            if not data:
                break
    state.update(size=st.st_size, mtime_ns=st.st_mtime_ns)
    return wrote
