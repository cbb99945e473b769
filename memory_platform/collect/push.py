"""Send the spool to the central server, oldest chunk first, and forget a chunk only once
the server has answered for it: a server killed mid-upload costs a resend, which adds
nothing (it writes the same bytes at the same offset, and events are unique by
(source, native_id)). Every request has a timeout."""

import re
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from memory_platform.collect import wire
from memory_platform.collect.spool import Spool

# Compressed bytes per request: under the server's default body limit (1 MiB).
REQUEST_BYTES = 900_000
TIMEOUT = httpx.Timeout(60.0, connect=5.0)


class Away(Exception):
    """The server is unreachable, or answered that it cannot take the chunks now."""


class Refused(Exception):
    """The server refuses this collector (a wrong, revoked or other machine's token): sending
    again changes nothing until a person acts."""


@dataclass
class PushOutcome:
    requests: int = 0
    chunks: int = 0
    events_new: int = 0
    events_existing: int = 0
    resent_files: int = 0
    rejected: int = 0  # chunks the server refused as malformed (kept in spool/rejected)
    errors: list[str] = field(default_factory=list)  # records the server could not store


def endpoint(server: str, machine: str) -> str:
    return f"{server.rstrip('/')}/ingest/{machine}/records"


def push(client: httpx.Client, url: str, spool: Spool, files: dict, *, token: str | None,
         uid: str, save, request_bytes: int = REQUEST_BYTES) -> PushOutcome:
    """Send everything the spool holds; raises Away or Refused (what was answered before
    stays answered)."""
    outcome = PushOutcome()
    # X-Memory-Platform: past the cross-site check when no token is needed (open loopback)
    headers = {"Content-Type": wire.CONTENT_TYPE, "X-Machine-Uid": uid,
               "X-Memory-Platform": "1"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    limit = request_bytes
    while entries := spool.entries():
        batch, size = [], 0
        for path, length in entries:
            if batch and size + length > limit:
                break
            batch.append(path)
            size += length
        try:
            body = b"".join(p.read_bytes() for p in batch)
        except FileNotFoundError:
            continue  # dropped meanwhile (drop_file); list again
        try:
            response = client.post(url, content=body, headers=headers, timeout=TIMEOUT)
        except httpx.HTTPError as exc:
            raise Away(f"{url}: {type(exc).__name__}: {exc}") from None
        outcome.requests += 1
        status = response.status_code
        if status == 413 and len(batch) > 1:
            limit = max(1, size // 2)
            continue
        if status in (413, 415, 422):
            _reject(spool, batch, f"{status} {_detail(response)}")
            outcome.rejected += len(batch)
            outcome.errors.append(f"the server refused {len(batch)} chunk(s) ({status}: "
                                  f"{_detail(response)}); kept in {spool.folder / 'rejected'}")
            continue
        if status in (401, 403, 404):
            raise Refused(f"{url}: {status} {_detail(response)}")
        if status != 200:
            raise Away(f"{url}: {status} {_detail(response)}")
        _apply(_answers(response, len(batch)), batch, spool, files, outcome)
        save()
        spool.remove(batch)
    return outcome


STATUSES = ("stored", "resend", "refused")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _answers(response: httpx.Response, sent: int) -> list[dict]:
    """The server's answer for each chunk sent, checked before any chunk is forgotten: a 200
    that is not a collector's answer (a proxy's page, another service behind --to, fewer
    results than chunks) is Away, and the spool keeps every chunk of the batch."""
    try:
        answer = response.json()
    except ValueError:
        answer = None
    chunks = answer.get("chunks") if isinstance(answer, dict) else None
    if not (isinstance(chunks, list) and len(chunks) == sent and all(
            isinstance(c, dict) and c.get("status") in STATUSES
            and all(isinstance(c.get(n, 0), int) and not isinstance(c.get(n, 0), bool)
                    for n in ("events_new", "events_existing"))
            and isinstance(c.get("errors", []), list)
            and all(isinstance(e, dict) for e in c.get("errors", [])) for c in chunks)):
        raise Away(f"{response.url}: 200 but not a collector's answer for {sent} chunk(s) "
                   f"(is --to a memory-platform server?): {_plain(response.text[:200])}")
    return chunks


def _plain(value: object) -> str:
    """A server's text as the terminal should show it: no control characters (escapes)."""
    return _CONTROL.sub("?", str(value))


def _apply(results: list, batch: list[Path], spool: Spool, files: dict,
           outcome: PushOutcome) -> None:
    by_key = {entry.get("key"): path for path, entry in files.items()}
    for path, result in zip(batch, results, strict=False):
        outcome.chunks += 1
        outcome.events_new += result.get("events_new", 0)
        outcome.events_existing += result.get("events_existing", 0)
        for error in result.get("errors", []):
            outcome.errors.append(_plain(f"{result.get('source_path')}: line "
                                         f"{error.get('line')}: {error.get('message')}"))
        if result.get("status") == "resend":
            # The server's copy does not start as this chunk says (its data was reset, or a
            # chunk was lost): read the whole file again; its waiting chunks are stale.
            key = path.name.split("-", 1)[1][: -len(".chunk.gz")]
            spool.drop_file(key)
            source = by_key.get(key)
            if source is not None:
                files.pop(source, None)
            outcome.resent_files += 1


def _reject(spool: Spool, batch: list[Path], why: str) -> None:
    folder = spool.folder / "rejected"
    folder.mkdir(exist_ok=True)
    for path in batch:
        try:
            path.rename(folder / path.name)
        except FileNotFoundError:
            continue
    with (folder / "why.txt").open("a", encoding="utf-8") as fh:
        fh.write(why + "\n")
    spool.recount()


def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    return _plain(detail if detail is not None else response.text[:300])
