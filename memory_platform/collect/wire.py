"""What a collector sends: chunks of a watched file's bytes, each one gzip member holding a
JSON header line and the bytes. A request body is any number of members back to back (a
valid multi-member gzip stream), so the spool's files are sent as they lie on disk.

Header: `root` (which watched folder: claude-code, codex, inbox, notes), `kind` (the adapter;
for the inbox, sniffed on the collector's machine), `rel` (the path under that folder),
`source_path` (the file's path on its machine, for provenance), `offset` (where the bytes go
in the file), `prefix_sha256` (sha256 of the file's bytes [0, offset): the prefix-hash rule
of local imports, so bytes are only ever appended to the same beginning), `length`,
`through_sha256` (sha256 of [0, offset + length), checked before anything is written) and
`complete` (the chunk reaches the end the file had when it was read: the receiver imports
it then)."""

import gzip
import json
import re
import zlib
from collections.abc import Iterator

CONTENT_TYPE = "application/x-memory-platform-chunks"
ROOTS = ("claude-code", "codex", "inbox", "notes")
# Raw bytes per chunk: even incompressible ones (a zip export) stay well under the server's
# default body limit (1 MiB, MEMORY_PLATFORM_API_MAX_BODY_BYTES) in one request.
CHUNK_BYTES = 512 * 1024
MAX_HEADER_BYTES = 8192
_SHA = re.compile(r"^[0-9a-f]{64}$")


class BadChunk(ValueError):
    """A request body or chunk header that is not what a collector sends."""


def encode(header: dict, data: bytes) -> bytes:
    line = json.dumps({**header, "length": len(data)}, separators=(",", ":")).encode()
    return gzip.compress(line + b"\n" + data, compresslevel=6, mtime=0)


def decode(body: bytes, max_inflated: int) -> Iterator[tuple[dict, bytes]]:
    """(header, bytes) of each chunk in a body; BadChunk when it is not gzip, inflates past
    `max_inflated` bytes in all (a zip bomb costs nothing), or a header is malformed."""
    left = max_inflated
    rest = body
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            member = inflater.decompress(rest, left + 1)
        except zlib.error as exc:
            raise BadChunk(f"the body is not gzip members: {exc}") from None
        if len(member) > left or inflater.unconsumed_tail:
            raise BadChunk(f"the body inflates past {max_inflated} bytes")
        if not inflater.eof:
            raise BadChunk("the body ends inside a gzip member (truncated)")
        left -= len(member)
        rest = inflater.unused_data
        yield _split(member)


def _split(member: bytes) -> tuple[dict, bytes]:
    end = member.find(b"\n", 0, MAX_HEADER_BYTES)
    if end < 0:
        raise BadChunk("a chunk has no header line")
    try:
        header = json.loads(member[:end])
    except (ValueError, RecursionError) as exc:
        raise BadChunk(f"a chunk header is not JSON: {exc}") from None
    data = member[end + 1:]
    check(header, data)
    return header, data


def check(header: object, data: bytes) -> None:
    """BadChunk naming what is wrong with a header."""
    if not isinstance(header, dict):
        raise BadChunk("a chunk header is not a JSON object")
    if header.get("root") not in ROOTS:
        raise BadChunk(f"unknown root {header.get('root')!r}; expected one of {ROOTS}")
    for name in ("kind", "rel", "source_path"):
        value = header.get(name)
        if not isinstance(value, str) or not value or "\x00" in value or len(value) > 4096:
            raise BadChunk(f"chunk header field {name!r} must be text without NUL")
    for name in ("offset", "length"):
        value = header.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadChunk(f"chunk header field {name!r} must be a non-negative integer")
    if header["length"] != len(data):
        raise BadChunk(f"chunk of {header['rel']!r} holds {len(data)} bytes, its header "
                       f"says {header['length']}")
    prefix = header.get("prefix_sha256")
    if header["offset"] and not (isinstance(prefix, str) and _SHA.match(prefix)):
        raise BadChunk("a chunk past offset 0 needs prefix_sha256")
    through = header.get("through_sha256")
    if not (isinstance(through, str) and _SHA.match(through)):
        raise BadChunk("chunk header field 'through_sha256' must be a sha256")
    if not isinstance(header.get("complete"), bool):
        raise BadChunk("chunk header field 'complete' must be true or false")
