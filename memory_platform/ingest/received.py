"""What collectors push (POST /ingest/{machine}/records): each chunk of a watched file's
bytes is written into this server's copy of that file (HOME/received/<machine id>/<root>/...)
and the copy imported by `import_path`, so pushed records land in the same tables through
the same writer (BatchWriter) as local files, with their machine, and the catalog, the
daily partitions, the lake and the embeddings see them as they see files.

A chunk is appended only to the beginning it names (the prefix-hash rule of local imports):
written at `offset` after the copy's first `offset` bytes hash to `prefix_sha256`, and only
once the bytes hash to `through_sha256`. A chunk sent again (a server killed mid-upload, a
retry) rewrites the same bytes at the same place; its records are unique by
(source, native_id), so nothing is added twice. A chunk whose beginning this copy does not
have is answered `resend`: the collector reads the whole file again. What the import could
not store (a NUL, an oversized record, a line that is not JSON) is reported per record."""

import fcntl
import hashlib
import json
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.adapters import KINDS
from memory_platform.collect import wire
from memory_platform.ingest.importer import import_path
from memory_platform.store import Database
from memory_platform.store import machines as machine_store
from memory_platform.store.machines import Machine

# What one request may inflate to: a 1 MiB body of transcripts compresses ~10x; far past
# that is a zip bomb.
MAX_INFLATED = 64 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class ChunkResult:
    source_path: str
    offset: int
    status: str  # stored | resend | refused
    events_new: int = 0
    events_existing: int = 0
    detail: str | None = None
    errors: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def mirror_path(home: Path, machine: Machine, header: dict) -> Path:
    """Where this server keeps its copy of a machine's file: named by what the collector
    says, but by a hash, so no name it sends is ever a path here."""
    digest = hashlib.sha256(header["rel"].encode("utf-8", "surrogateescape")).hexdigest()[:24]
    name = _UNSAFE.sub("_", Path(header["rel"]).name)[-120:].lstrip(".") or "file"
    return Path(home) / "received" / str(machine.id) / header["root"] / digest / name


def receive(db: Database, home: Path, machine: Machine, uid: str | None, body: bytes,
            max_inflated: int = MAX_INFLATED) -> list[ChunkResult]:
    """Apply and import every chunk of a push, in order. wire.BadChunk (nothing applied from
    the bad chunk on) when the body is not what a collector sends."""
    results = []
    for header, data in wire.decode(body, max_inflated):
        results.append(_one(db, home, machine, header, data))
    with db.connect() as conn:
        machine_store.record_push(conn, machine.id, uid)
    return results


def _one(db: Database, home: Path, machine: Machine, header: dict, data: bytes) -> ChunkResult:
    result = ChunkResult(header["source_path"], header["offset"], "stored")
    if header["kind"] not in KINDS:
        result.status, result.detail = "refused", f"unknown source kind {header['kind']!r}"
        return result
    target = mirror_path(home, machine, header)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent):
        problem = _apply(target, header, data)
        if problem:
            result.status, result.detail = "resend", problem
            return result
        if header["complete"]:
            report = import_path(db, header["kind"], target,
                                 origin=f"collect:{machine.name}", machine_id=machine.id)
            result.events_new = report.events_new
            result.events_existing = report.events_existing
            result.errors = [{"line": e.line, "record_id": e.record_id, "message": e.message}
                             for e in report.errors]
    return result


def _apply(target: Path, header: dict, data: bytes) -> str | None:
    """Write the chunk into the copy; why not (the copy lacks its beginning), else None."""
    offset = header["offset"]
    digest = hashlib.sha256()
    if offset:
        try:
            fd = os.open(target, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            return "this server has no copy of the file's beginning"
        with os.fdopen(fd, "r+b") as fh:
            if os.fstat(fh.fileno()).st_size < offset:
                return "this server's copy is shorter than the chunk's offset"
            left = offset
            while left:
                piece = fh.read(min(left, 1 << 20))
                digest.update(piece)
                left -= len(piece)
            if digest.hexdigest() != header["prefix_sha256"]:
                return "this server's copy begins otherwise"
            digest.update(data)
            if digest.hexdigest() != header["through_sha256"]:
                return "the chunk's bytes do not hash to through_sha256"
            if fh.read(len(data) + 1)[: len(data)] == data:
                return None  # sent again (a retry): the copy holds it; later bytes stay
            fh.seek(offset)
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        return None
    digest.update(data)
    if digest.hexdigest() != header["through_sha256"]:
        return "the chunk's bytes do not hash to through_sha256"
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    # dot-named: a copy's name never starts with a dot (mirror_path), so a machine's own
    # file named origin.json is not overwritten by this
    (target.parent / ".origin.json").write_text(json.dumps(
        {"root": header["root"], "rel": header["rel"], "source_path": header["source_path"]}))
    return None


@contextmanager
def _locked(folder: Path):
    """One chunk of a file at a time (a retry may arrive while the first try still runs)."""
    with open(folder / ".lock", "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
