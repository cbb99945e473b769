"""POST /ingest/{machine}/records: what a machine's collector (memory-platform collect)
pushes. The body is the collector's chunks (collect/wire.py: gzip members, each a header
line and a file's new bytes); each is written into this server's copy of that file and
imported through the same writer as local files (ingest/received.py), with the machine.

Rule `collector` (api/access.py): the machine's collector token, or the admin token. The
app's guards hold as for every route (Host check, body limit, cross-site check, plain path
parameters). Answers: 200 with one result per chunk (stored / resend / refused, the records
the import could not store, each with its line); 415 for another content type; 404 for an
unknown machine; 422 for a body that is not a collector's (nothing after the bad chunk is
applied); 503 while the database is down (the collector keeps its spool and retries)."""

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from memory_platform.api.access import Caller, Rules
from memory_platform.collect import wire
from memory_platform.ingest import machines, received
from memory_platform.store import Database


def ingest_router(database: Database, rules: Rules, home: Path) -> APIRouter:
    router = APIRouter(prefix="/ingest")

    @router.post("/{machine}/records", responses={
        404: {"description": "no such machine"}, 415: {"description": "not a collector's "
        "body"}, 422: {"description": "a malformed chunk"}})
    async def push_records(machine: str, request: Request,
                           caller: Annotated[Caller, Depends(rules.collector)]) -> dict:
        """Append a machine's raw records (the collector's chunks)."""
        content_type = request.headers.get("content-type", "").split(";", 1)[0].strip()
        if content_type != wire.CONTENT_TYPE:
            raise HTTPException(status_code=415, detail=f"send the collector's chunks as "
                                f"Content-Type: {wire.CONTENT_TYPE}")
        body = await request.body()
        uid = request.headers.get("x-machine-uid")
        found = await run_in_threadpool(machines.find, database, machine)
        if found is None:
            raise HTTPException(status_code=404, detail=(
                f"no machine named {machine!r}: create its collector token with "
                f"`memory-platform token create --kind collector --machine {machine}`"))
        try:
            results = await run_in_threadpool(received.receive, database, home, found,
                                              uid, body)
        except wire.BadChunk as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        return {"machine": found.name, "chunks": [r.to_dict() for r in results]}

    return router
