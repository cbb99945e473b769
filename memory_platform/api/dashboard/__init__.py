"""The review dashboard: clear the review backlog from a browser, keyboard first.

    GET  /review                      one card per primary namespace: pending, oldest entry's
                                      age; then the open findings per namespace
    GET  /review/{namespace}          the pending entries, one card each (j/k a e s u x A)
    GET  /review/event/{id}?memory=M  a source turn with 3 turns before and after
    GET  /review/login, POST          a token form; sets an HttpOnly SameSite=Strict cookie
    POST /review/api/entries/{id}/approve     {"text"?, "namespace"?}
    POST /review/api/entries/{id}/skip        {"reason"?}
    POST /review/api/entries/{id}/supersede   {"old_memory_id", "text"?}
    POST /review/api/bulk-approve             {"ids": [...]}
    GET  /review/api/{namespace}/entries?after_id=   the next page of cards (HTML)
    GET  /review/api/status                   Dagster recording: queued, recorded, failed
    GET  /review/static/...                   the CSS and JS (served here, no CDN)
    GET  /review/orchard                      the projects: the week's ranking, edit forms,
                                              proposals (orchard.py; its forms go to /orchard)
    GET  /review/curator?namespace=           the curator's cuts by run, refused runs first,
                                              purge countdowns (curator.py; j/k r)
    POST /review/api/curator/cuts/{id}/restore        restore a cut within its window
    GET  /review/findings?namespace=          open lint and wiki findings with their memories
                                              and evidence (findings.py; j/k 1-9 u a n)
    POST /review/api/findings/{id}/resolve            supersede, archive or keep

A decision is made synchronously, in the request, by `review.approve/skip/supersede`: the
entry is promoted and readable when the response arrives (a Dagster run in process takes
1.5-3.5 s here, far above the 300 ms a click may take). The same decision is then recorded
as a run of `vault_promotion_job` (action `record`) by `PromotionRecorder`, one worker
thread draining a queue into a niced child process, so every promotion still shows up in
Dagster with its lineage. Failures are logged at ERROR with the traceback and counted in
the header of every page (queued, recorded, failed, last error). Decisions still queued
when a server stops are not lost to Dagster: at start, the recorder looks for approvals of
the last 14 days without a successful run and records them (`PromotionRecorder.catch_up`).

Auth is the app's rules (api/access.py; the resolver also accepts the login cookie).
A token scoped to `work` sees only work's cards and entries (403 for a namespace, 404 for
an entry outside it). Decisions are audited as `dashboard:<token name>` (`dashboard:local`
on open loopback, `dashboard:admin` with the admin token).

Modules: routes.py (the routes, thin: scope checks and service calls), recorder.py (the
Dagster recording), pages.py (Jinja2 rendering, auto-escaped), orchard.py (the projects
page, mounted by api/orchard.py), curator.py (the curator page, mounted by api/curator.py),
findings.py (the findings page, mounted by api/recall.py), templates/ (the HTML), static/
(review.css; status.js, the header on every page; review.js, the keyboard and the actions
of a namespace's page; orchard.js, the projects page's forms; curator.js, the curator
page's keyboard and restore; findings.js, the findings page's keyboard and decisions).
"""

from memory_platform.api.dashboard.recorder import PromotionRecorder
from memory_platform.api.dashboard.routes import dashboard_router, mount_dashboard

__all__ = ["PromotionRecorder", "dashboard_router", "mount_dashboard"]
