"""Send the spool to the central server, oldest chunk first, and forget a chunk only once
the server has answered for it: a server killed mid-upload costs a resend, which adds
nothing (it writes the same bytes at the same offset, and events are unique by
(source, native_id)). Every request has a timeout."""

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
        _apply(response.json().get("chunks", []), batch, spool, files, outcome)
        save()
        spool.remove(batch)
    return outcome


def _apply(results: list, batch: list[Path], spool: Spool, files: dict,
           outcome: PushOutcome) -> None:
    by_key = {entry.get("key"): path for path, entry in files.items()}
    for path, result in zip(batch, results, strict=False):
        outcome.chunks += 1
        outcome.events_new += result.get("events_new", 0)
        outcome.events_existing += result.get("events_existing", 0)
        for error in result.get("errors", []):
            outcome.errors.append(f"{result.get('source_path')}: line {error.get('line')}: "
                                  f"{error.get('message')}")
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
    return str(detail if detail is not None else response.text[:300])
