"""The review dashboard: clear the review backlog from a browser, keyboard first.

    GET  /review                      one card per primary namespace: pending, oldest entry's age
    GET  /review/{namespace}          the pending entries, one card each (j/k a e s u x A)
    GET  /review/event/{id}?memory=M  a source turn with 3 turns before and after
    GET  /review/login, POST          a token form; sets an HttpOnly SameSite=Strict cookie
    POST /review/api/entries/{id}/approve     {"text"?, "namespace"?}
    POST /review/api/entries/{id}/skip        {"reason"?}
    POST /review/api/entries/{id}/supersede   {"old_memory_id", "text"?}
    POST /review/api/bulk-approve             {"ids": [...]}
    GET  /review/api/{namespace}/entries?after_id=   the next page of cards (HTML)
    GET  /review/api/status                   Dagster recording: queued, recorded, failed

A decision is made synchronously, in the request, by `review.approve/skip/supersede`: the
entry is promoted and readable when the response arrives (a Dagster run in process takes
1.5-3.5 s here, far above the 300 ms a click may take). The same decision is then recorded
as a run of `vault_promotion_job` (action `record`) by `PromotionRecorder`, one worker
thread draining a queue into a niced child process, so every promotion still shows up in
Dagster with its lineage. Failures are logged at ERROR with the traceback and counted in
the header of every page (queued, recorded, failed, last error). Decisions still queued
when a server stops are not lost to Dagster: at start, the recorder looks for approvals of
the last 14 days without a successful run and records them (`PromotionRecorder.catch_up`).

Auth is the app's `resolve_caller` (api/vault.py), which also accepts the login cookie.
A token scoped to `work` sees only work's cards and entries (403 for a namespace, 404 for
an entry outside it). Decisions are audited as `dashboard:<token name>` (`dashboard:local`
on open loopback, `dashboard:admin` with the admin token).
"""

import html
import logging
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, Field
from starlette.requests import Request as StarletteRequest

from memory_platform.api.vault import SESSION_COOKIE, Caller
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import review as review_store
from memory_platform.vault import queue as review_queue
from memory_platform.vault import review

log = logging.getLogger(__name__)
PAGE = review_queue.PAGE_SIZE
CONTEXT_TURNS = 3
# How far back a starting server looks for approvals that never became Dagster runs.
CATCH_UP_DAYS = 14


# --- recording decisions as Dagster runs ---------------------------------------------------


class PromotionRecorder:
    """Records decisions already made as runs of vault_promotion_job (action `record`), in
    the order they were made, on the instance `memory-platform up` shows.

    One daemon thread drains the queue; it hands each decision to one long-lived child
    process (spawned on first use, niced) that imports Dagster once and executes the runs.
    In this process's own threads, a Dagster run (1.5-3.5 s of Python) held the GIL against
    the request handlers: clicks took 400-3,000 ms instead of ~60 ms (measured, see
    bench_review), and even in a niced child a run competes for the CPU: on this 2-core
    machine clicks took ~450 ms while runs were executing, ~160 ms otherwise. So the worker
    also waits until no decision has come for QUIET_S seconds: a reviewer clearing a backlog
    at speed gets fast clicks, and the runs catch up when they pause. A crashed child is
    replaced for the next decision."""

    QUIET_S = 2.0

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool = None
        self._last_submit = 0.0
        self.recorded = 0
        self.failed = 0
        self.last_error: str | None = None
        self.runs: dict[int, str] = {}  # shadow memory id -> run id

    def submit(self, memory_id: int, promoted_id: int, *, actor: str,
               old_memory_id: int | None = None) -> None:
        self._queue.put((memory_id, promoted_id, actor, old_memory_id))
        with self._lock:
            self._last_submit = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="promotion-recorder",
                                                daemon=True)
                self._thread.start()

    def _child(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_child_init)
        return self._pool

    def _work(self) -> None:
        from concurrent.futures.process import BrokenProcessPool

        while True:
            memory_id, promoted_id, actor, old_id = self._queue.get()
            while (quiet := time.monotonic() - self._last_submit) < self.QUIET_S:
                time.sleep(self.QUIET_S - quiet)
            try:
                run_id = self._child().submit(_record, memory_id, promoted_id, actor,
                                              old_id).result()
                with self._lock:
                    self.recorded += 1
                    self.runs[memory_id] = run_id
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, counted, shown)
                if isinstance(exc, BrokenProcessPool):
                    self._pool = None  # the next decision gets a new child
                log.error("recording the decision on memory %s as a Dagster run failed:\n%s",
                          memory_id, "".join(traceback.format_exception(exc)))
                with self._lock:
                    self.failed += 1
                    self.last_error = f"memory {memory_id}: {type(exc).__name__}: {exc}"
            finally:
                self._queue.task_done()

    def catch_up(self, database: Database, *, days: int = CATCH_UP_DAYS) -> threading.Thread:
        """Record the approvals of the last `days` days that have no successful Dagster run
        (decisions still queued when an earlier server stopped or crashed), in a background
        thread. Only decisions made before now are considered: later ones are this
        recorder's own queue. The child process is started only when there are approvals
        to check."""
        until = datetime.now(timezone.utc)
        since = until - timedelta(days=days)

        def work() -> None:
            try:
                with database.connect() as conn:
                    approvals = review_store.approvals_between(conn, since, until)
                if not approvals:
                    return
                missing = self._child().submit(_unrecorded, approvals, since).result()
                if missing:
                    log.warning("recording %d approvals made while no recorder ran "
                                "(memories %s)", len(missing),
                                ", ".join(str(a["memory_id"]) for a in missing))
                for a in missing:
                    self.submit(a["memory_id"], a["promoted_id"], actor=a["actor"],
                                old_memory_id=a["old_memory_id"])
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, shown)
                log.error("catching up on unrecorded approvals failed:\n%s",
                          "".join(traceback.format_exception(exc)))
                with self._lock:
                    self.last_error = f"catch-up: {type(exc).__name__}: {exc}"

        thread = threading.Thread(target=work, name="promotion-catch-up", daemon=True)
        thread.start()
        return thread

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted decision is recorded (or failed); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def status(self) -> dict:
        with self._lock:
            queued = self._queue.unfinished_tasks
            alive = self._thread is not None and self._thread.is_alive()
            worker = "idle" if not queued else "running" if alive else "dead"
            return {"queued": queued, "recorded": self.recorded, "failed": self.failed,
                    "last_error": self.last_error, "worker": worker}

    def close(self) -> None:
        """Stop the child process once it is idle (what is queued is not recorded)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _child_init() -> None:
    import warnings

    os.nice(10)  # the reviewer's clicks come first; the record can wait a moment
    # beta/preview notices are for developers, as in the CLI
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


def _unrecorded(approvals: list[dict], since: datetime) -> list[dict]:
    """In the recorder's child process: the approvals without a successful
    vault_promotion_job run for their entry. Runs from a day before `since` count too: a
    CLI decision is made inside its run, so the run starts just before the decision."""
    from memory_platform import launch
    from memory_platform.settings import load_settings

    instance = launch.prepare_instance(load_settings())
    recorded = launch.recorded_memory_ids(instance, since - timedelta(days=1))
    return [a for a in approvals if str(a["memory_id"]) not in recorded]


def _record(memory_id: int, promoted_id: int, actor: str, old_memory_id: int | None) -> str:
    """In the recorder's child process: one run of vault_promotion_job; returns its id."""
    from memory_platform import launch
    from memory_platform.settings import load_settings

    done = launch.promote_via_dagster(load_settings(), memory_id, {
        "action": "record", "actor": actor, "promoted_id": promoted_id,
        "old_memory_id": old_memory_id}, trigger="dashboard")
    return done["run_id"]


# --- request bodies --------------------------------------------------------------------------


class ApproveBody(BaseModel):
    text: str | None = None
    namespace: str | None = None


class SkipBody(BaseModel):
    reason: str | None = None


class SupersedeBody(BaseModel):
    old_memory_id: int
    text: str | None = None


class BulkBody(BaseModel):
    ids: list[int] = Field(min_length=1)


# --- rendering -------------------------------------------------------------------------------

e = html.escape

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}
header{display:flex;gap:1em;align-items:baseline;padding:.6em 1.2em;background:#263238;color:#eee}
header a{color:#fff}header .runs{margin-left:auto;font-size:12px;opacity:.85}
.runs.bad{color:#ff8a80;opacity:1}main{max-width:980px;margin:1em auto;padding:0 1em}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.7em 1em;margin:.6em 0}
.card.sel{border-color:#1565c0;box-shadow:0 0 0 2px #90caf9}.card.checked{background:#e3f2fd}
.meta{font-size:12px;color:#555}.text{font-size:15px;margin:.3em 0}.why{color:#444}
.near,.old{font-size:13px;background:#fafafa;border-left:3px solid #bbb;padding:.2em .6em}
.old{border-color:#e65100}.msg{color:#b71c1c;font-weight:600}.ok{color:#2e7d32}
textarea{width:100%;font:inherit}button{font-size:12px}kbd{border:1px solid #aaa;
border-radius:3px;padding:0 3px;font-size:11px}.help{font-size:12px;color:#555}
.turn{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5em .8em;margin:.4em 0;
white-space:pre-wrap}.turn.cited{border-color:#1565c0;box-shadow:0 0 0 2px #90caf9}
"""


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def _page(title: str, body: str, *, script: str = "") -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{e(title)}</title>"
        f"<style>{CSS}</style></head><body><header><b>memory-platform review</b>"
        f"<a href='/review'>namespaces</a><span class=runs id=runs></span></header>"
        f"<main>{body}</main><script>{STATUS_JS}{script}</script></body></html>")


def _entry_html(entry: dict, targets: list[str]) -> str:
    prov = entry["provenance"]
    links = " ".join(
        f"<a href='/review/event/{int(ev)}?memory={entry['id']}' target=_blank>#{int(ev)}</a>"
        for ev in prov["source_event_ids"]) or "none"
    options = "".join(
        f"<option{' selected' if t == entry['target_namespace'] else ''}>{e(t)}</option>"
        for t in targets)
    near = entry["nearest"]
    near_html = (f"<div class=near>nearest: #{near['id']} “{e(near['text'])}” "
                 f"<span class=meta>similarity {near['similarity']:.2f}</span></div>"
                 if near else "<div class=meta>no similar memory yet</div>")
    old = entry["contradicts"]
    old_html = ""
    if old:
        action = (f"<button data-act=supersede>supersede #{old['id']} <kbd>u</kbd></button>"
                  if old["current"] else "<span class=meta>(no longer current)</span>")
        old_html = (f"<div class=old>contradicts #{old['id']}: “{e(old['text'])}” {action}"
                    f"</div>")
    verdict = entry["verdict"]["verdict"] if entry["verdict"] else "no verdict"
    return (
        f"<div class=card data-id={entry['id']} data-default-ns='{e(entry['target_namespace'])}'"
        f" data-old='{old['id'] if old and old['current'] else ''}'>"
        f"<div class=meta><input type=checkbox tabindex=-1 class=pick> #{entry['id']} · score "
        f"{entry['score'] if entry['score'] is not None else '–'} · {e(entry['category'])} · "
        f"{e(verdict)} · {e(entry['namespace'])} → <select class=target tabindex=-1>{options}"
        f"</select> · sources {links}</div>"
        f"<div class=text>{e(entry['text'])}</div>"
        f"<div class=why>{e(entry['why'] or '')}</div>{near_html}{old_html}"
        f"<div class=edit hidden><textarea rows=2>{e(entry['text'])}</textarea>"
        f"<div class=help><kbd>Enter</kbd> approve edited · <kbd>Esc</kbd> cancel</div></div>"
        f"<div class=skip hidden><input class=reason placeholder='reason (optional), Enter "
        f"skips' size=50></div><div class=msg></div>"
        f"<button data-act=approve>approve <kbd>a</kbd></button> "
        f"<button data-act=edit>edit <kbd>e</kbd></button> "
        f"<button data-act=skip>skip <kbd>s</kbd></button></div>")


STATUS_JS = """
async function runs(){try{const r=await fetch('/review/api/status');if(!r.ok)return;
const s=await r.json(),el=document.getElementById('runs');
el.textContent=`Dagster runs: ${s.queued} queued · ${s.recorded} recorded · ${s.failed} failed`
+(s.worker==='dead'?' · recorder stopped':'')+(s.last_error?` (last: ${s.last_error})`:'');
el.className='runs'+(s.failed||s.worker==='dead'?' bad':'');}catch(e){}}
runs();setInterval(runs,4000);
"""

REVIEW_JS = """
const list=document.getElementById('entries'),counter=document.getElementById('total');
let total=+counter.textContent,nextAfter=list.dataset.next,loading=false;
const cards=()=>[...list.querySelectorAll('.card:not(.gone)')];
let sel=0;
function show(){const c=cards();if(!c.length){list.innerHTML=
 '<p class=ok id=empty>Nothing left to review here.</p>';return}
 sel=Math.max(0,Math.min(sel,c.length-1));c.forEach((x,i)=>x.classList.toggle('sel',i===sel));
 c[sel].scrollIntoView({block:'nearest'});if(c.length-sel<10)more();}
async function more(){if(loading||!nextAfter)return;loading=true;
 const r=await fetch(`/review/api/${encodeURIComponent(list.dataset.ns)}/entries?after_id=${nextAfter}`);
 loading=false;if(!r.ok)return;const d=await r.json();nextAfter=d.next_after_id;
 list.insertAdjacentHTML('beforeend',d.html);show();}
const current=()=>cards()[sel];
async function post(url,body){const r=await fetch(url,{method:'POST',headers:
 {'Content-Type':'application/json'},body:JSON.stringify(body)});
 let d={};try{d=await r.json()}catch(e){}return [r.status,d];}
function done(card){card.classList.add('gone');card.remove();total-=1;
 counter.textContent=total;show();}
function fail(card,status,d){card.querySelector('.msg').textContent=
 (status===409?'Conflict: ':`Error ${status}: `)+(d.detail||'request failed');}
async function act(card,kind,extra){if(!card||card.dataset.busy)return;card.dataset.busy=1;
 const id=card.dataset.id,body=extra||{};
 if(kind==='approve'){const ns=card.querySelector('.target').value;
  if(ns!==card.dataset.defaultNs)body.namespace=ns;}
 if(kind==='supersede')body.old_memory_id=+card.dataset.old;
 const [status,d]=await post(`/review/api/entries/${id}/${kind}`,body);delete card.dataset.busy;
 if(status===200)done(card);else fail(card,status,d);}
function edit(card){const box=card.querySelector('.edit'),ta=box.querySelector('textarea');
 box.hidden=false;ta.focus();ta.setSelectionRange(ta.value.length,ta.value.length);}
function skip(card){const box=card.querySelector('.skip');box.hidden=false;
 box.querySelector('input').focus();}
list.addEventListener('keydown',ev=>{const card=ev.target.closest('.card');if(!card)return;
 if(ev.target.tagName==='TEXTAREA'){if(ev.key==='Enter'&&!ev.shiftKey){ev.preventDefault();
   ev.target.blur();card.querySelector('.edit').hidden=true;
   act(card,'approve',{text:ev.target.value});}
  else if(ev.key==='Escape'){ev.target.blur();card.querySelector('.edit').hidden=true;}
  ev.stopPropagation();}
 else if(ev.target.classList.contains('reason')){if(ev.key==='Enter'){ev.preventDefault();
   ev.target.blur();card.querySelector('.skip').hidden=true;
   act(card,'skip',{reason:ev.target.value||null});}
  else if(ev.key==='Escape'){ev.target.blur();card.querySelector('.skip').hidden=true;}
  ev.stopPropagation();}});
list.addEventListener('click',ev=>{const b=ev.target.closest('button[data-act]');
 const card=ev.target.closest('.card');if(!card)return;sel=cards().indexOf(card);show();
 if(ev.target.classList.contains('pick')){card.classList.toggle('checked',ev.target.checked);
  ev.target.blur();}
 if(!b)return;const k=b.dataset.act;
 if(k==='edit')edit(card);else if(k==='skip')skip(card);else act(card,k);});
list.addEventListener('change',ev=>{if(ev.target.classList.contains('target'))ev.target.blur();});
async function bulk(){const picked=cards().filter(c=>c.querySelector('.pick').checked);
 if(!picked.length)return;const [status,d]=await post('/review/api/bulk-approve',
 {ids:picked.map(c=>+c.dataset.id)});if(status!==200){fail(current(),status,d);return;}
 for(const r of d.results){const c=list.querySelector(`.card[data-id="${r.id}"]`);
  if(r.outcome==='approved')done(c);else{c.querySelector('.msg').textContent=r.message;
  c.querySelector('.pick').checked=false;c.classList.remove('checked');}}}
document.addEventListener('keydown',ev=>{const t=ev.target.tagName;
 if(t==='TEXTAREA'||t==='INPUT'||t==='SELECT'||ev.metaKey||ev.ctrlKey||ev.altKey)return;
 const card=current();const k=ev.key;
 if(k==='j'){sel+=1;show();}else if(k==='k'){sel-=1;show();}
 else if(k==='a')act(card,'approve');else if(k==='e'&&card)edit(card);
 else if(k==='s'&&card)skip(card);else if(k==='u'&&card&&card.dataset.old)act(card,'supersede');
 else if(k==='x'&&card){const p=card.querySelector('.pick');p.checked=!p.checked;
  card.classList.toggle('checked',p.checked);}
 else if(k==='t'&&card)card.querySelector('.target').focus();
 else if(k==='A')bulk();else return;ev.preventDefault();});
show();
"""


# --- the router --------------------------------------------------------------------------


def _actor(caller: Caller) -> str:
    return "dashboard:" + caller.actor.split(":", 1)[-1]


def dashboard_router(database: Database, resolve: Callable[[Request], Caller],
                     recorder: PromotionRecorder | None = None) -> APIRouter:
    """The /review pages and their JSON actions; decisions are recorded as Dagster runs by
    `recorder` (default: a PromotionRecorder on the `memory-platform up` instance)."""
    router = APIRouter(prefix="/review", include_in_schema=False)
    recorder = recorder or PromotionRecorder()
    router.recorder = recorder  # for tests and the benchmark

    def page_caller(request: Request) -> Caller:
        try:
            return resolve(request)
        except HTTPException as exc:
            if exc.status_code == 401:  # a browser goes to the login form
                raise HTTPException(status_code=303, headers={
                    "Location": f"/review/login?next={quote(request.url.path)}"}) from exc
            raise

    PageCaller = Annotated[Caller, Depends(page_caller)]
    ApiCaller = Annotated[Caller, Depends(resolve)]

    def visible(caller: Caller, namespace: str) -> None:
        if not caller.scope.permits(namespace):
            raise HTTPException(status_code=403, detail=f"this token is limited to "
                                f"{caller.scope.describe()}; {namespace!r} is outside it")

    def targets(caller: Caller) -> list[str]:
        with database.connect() as conn:
            return [n["name"] for n in namespace_store.list_namespaces(conn)
                    if n["kind"] == "primary" and caller.scope.permits(n["name"])]

    def entries_page(caller: Caller, namespace: str, after_id: int) -> dict:
        visible(caller, namespace)
        try:
            entries, total = review_queue.pending(database, namespace, after_id=after_id, limit=PAGE)
        except ValueError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        names = targets(caller)
        last = entries[-1]["id"] if entries else None
        more = last is not None and len(entries) == PAGE
        return {"html": "".join(_entry_html(x, names) for x in entries), "total": total,
                "count": len(entries), "next_after_id": last if more else None}

    def own_entry(caller: Caller, memory_id: int, target: str | None = None) -> dict:
        with database.connect() as conn:
            row = memory_store.get_memory(conn, memory_id)
        if row is None or not caller.scope.permits(row["namespace"]):
            raise HTTPException(status_code=404, detail=f"no memory {memory_id}")
        if target is not None:
            visible(caller, target)
        return row

    def decide(fn, *args, **kwargs) -> dict:
        try:
            return fn(*args, **kwargs)
        except review.ReviewConflict as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

    def record(done: dict) -> None:
        recorder.submit(done["memory_id"], done["promoted_id"], actor=done["actor"],
                        old_memory_id=done.get("superseded_id"))

    # --- pages

    @router.get("/login", response_class=HTMLResponse)
    def login_form(next: str = "/review", error: str = "") -> HTMLResponse:
        msg = f"<p class=msg>{e(error)}</p>" if error else ""
        return _page("log in", f"<h2>Log in</h2>{msg}<form method=post action='/review/login'>"
                     f"<input type=hidden name=next value='{e(next)}'>"
                     f"<input type=password name=token placeholder='API token' size=50 "
                     f"autofocus> <button>log in</button></form>"
                     f"<p class=help>An admin token or one from <code>memory-platform token "
                     f"create</code>. It is kept in an HttpOnly cookie for this site.</p>")

    @router.post("/login")
    async def login(request: Request) -> RedirectResponse:
        form = parse_qs((await request.body()).decode())
        token = (form.get("token") or [""])[0].strip()
        target = (form.get("next") or ["/review"])[0]
        if not target.startswith("/review"):
            target = "/review"  # no open redirect
        probe = StarletteRequest({"type": "http", "method": "GET", "path": "/review",
                                  "headers": [(b"authorization", f"Bearer {token}".encode())]})
        try:
            resolve(probe)
        except HTTPException:
            return RedirectResponse(f"/review/login?next={quote(target)}&error="
                                    f"{quote('that token is not valid')}", status_code=303)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict",
                            path="/", secure=request.url.scheme == "https")
        return response

    @router.get("", response_class=HTMLResponse)
    def overview(caller: PageCaller) -> HTMLResponse:
        cards = [c for c in review_queue.overview(database) if caller.scope.permits(c["namespace"])]
        body = "".join(
            f"<a class=ns href='/review/{quote(c['namespace'])}'><div class=card>"
            f"<b>{e(c['namespace'])}</b> · <span class=pending>{c['pending']}</span> pending · "
            f"oldest {_age(c['age_seconds'])} old</div></a>" for c in cards)
        return _page("review", f"<h2>Waiting for review</h2>"
                     f"{body or '<p class=ok>Nothing waits for review.</p>'}"
                     f"<p class=help>Signed in as {e(_actor(caller))}; "
                     f"{e(caller.scope.describe())}.</p>")

    @router.get("/event/{event_id:int}", response_class=HTMLResponse)
    def event(event_id: int, caller: PageCaller, memory: int | None = None) -> HTMLResponse:
        from memory_platform.query import search as cairn

        if not caller.scope.unrestricted:
            # cairn is not split by namespace: a scoped caller sees only turns an entry of
            # theirs cites, and their conversation context.
            cited = own_entry(caller, memory)["source_event_ids"] if memory is not None else []
            if event_id not in (cited or []):
                raise HTTPException(status_code=403, detail="a scoped token opens only the "
                                    "source turns its own entries cite")
        found = cairn.get_event(database, event_id, before=CONTEXT_TURNS, after=CONTEXT_TURNS)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no event with id {event_id}")

        def turn(ev: dict, cited: bool = False) -> str:
            return (f"<div class='turn{' cited' if cited else ''}' data-event={ev['event_id']}>"
                    f"<div class=meta>#{ev['event_id']} · {e(str(ev['occurred_at']))} · "
                    f"{e(ev['role'])} · {e(ev['source'])}</div>{e(ev['text'] or '')}</div>")

        body = "".join([*(turn(x) for x in found["before"]), turn(found["event"], True),
                        *(turn(x) for x in found["after"])])
        return _page(f"event {event_id}", f"<h2>Source turn #{event_id}</h2>{body}")

    @router.get("/{namespace}", response_class=HTMLResponse)
    def namespace_page(namespace: str, caller: PageCaller) -> HTMLResponse:
        first = entries_page(caller, namespace, 0)
        body = (f"<h2>{e(namespace)}: <span id=total>{first['total']}</span> pending</h2>"
                f"<p class=help><kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · "
                f"<kbd>e</kbd> edit, then Enter · <kbd>s</kbd> skip (reason, Enter) · "
                f"<kbd>u</kbd> supersede · <kbd>t</kbd> target namespace · <kbd>x</kbd> select"
                f" · <kbd>A</kbd> approve selected</p>"
                f"<div id=entries data-ns='{e(namespace)}' "
                f"data-next='{first['next_after_id'] or ''}'>{first['html']}</div>")
        return _page(f"review {namespace}", body, script=REVIEW_JS)

    # --- JSON

    @router.get("/api/status")
    def status(caller: ApiCaller) -> dict:
        return recorder.status()

    @router.get("/api/{namespace}/entries")
    def more_entries(namespace: str, caller: ApiCaller, after_id: int = 0) -> dict:
        return entries_page(caller, namespace, after_id)

    @router.post("/api/entries/{memory_id:int}/approve")
    def approve(memory_id: int, body: ApproveBody, caller: ApiCaller) -> dict:
        own_entry(caller, memory_id, body.namespace)
        done = decide(review.approve, database, memory_id, actor=_actor(caller),
                      text=body.text, namespace=body.namespace)
        record(done)
        return done

    @router.post("/api/entries/{memory_id:int}/supersede")
    def supersede(memory_id: int, body: SupersedeBody,
                  caller: ApiCaller) -> dict:
        own_entry(caller, memory_id)
        own_entry(caller, body.old_memory_id)
        done = decide(review.supersede, database, memory_id, actor=_actor(caller),
                      old_memory_id=body.old_memory_id, text=body.text)
        record(done)
        return done

    @router.post("/api/entries/{memory_id:int}/skip")
    def skip(memory_id: int, body: SkipBody, caller: ApiCaller) -> dict:
        # A skip promotes nothing, so it is no vault_promotions run; vault_audit records it.
        own_entry(caller, memory_id)
        row = decide(review.skip, database, memory_id, actor=_actor(caller),
                     reason=body.reason)
        return {"memory_id": row["id"], "action": "skip", "review_note": row["review_note"]}

    @router.post("/api/bulk-approve")
    def bulk_approve(body: BulkBody, caller: ApiCaller) -> dict:
        for memory_id in body.ids:
            own_entry(caller, memory_id)
        actor = _actor(caller)
        results = review.bulk_approve(database, body.ids, actor=actor)
        for r in results:
            if r["outcome"] == "approved":
                recorder.submit(r["id"], r["promoted_id"], actor=actor)
        return {"results": results}

    return router


def mount_dashboard(app, database: Database, recorder: PromotionRecorder | None = None) -> None:
    """Mount /review on the app, with the app's caller resolver; the recorder is kept as
    `app.state.review_recorder`, and starts catching up on approvals an earlier server
    left unrecorded (its thread: `app.state.review_catch_up`)."""
    router = dashboard_router(database, app.state.resolve_caller, recorder)
    app.state.review_recorder = router.recorder
    app.state.review_catch_up = router.recorder.catch_up(database)
    app.include_router(router)
