"""The weekly reports on the web: GET /reports (every week written, newest first),
GET /reports/{week} (one report as a page) and GET /reports/{week}/{chart}.png.

Everything is served from this machine: the page is server-rendered HTML with inline CSS,
its charts come from the report's folder, and no script, font or stylesheet is fetched
from anywhere. Reports summarize every conversation of a week, unscoped, so they need the
admin token (or open loopback), like cairn's own routes. The markdown is rendered with raw
HTML disabled: a summary the model wrote cannot inject markup.
"""

import html

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import FileResponse, HTMLResponse
from markdown_it import MarkdownIt

from memory_platform.analytics import service
from memory_platform.api.access import Rules
from memory_platform.settings import load_settings

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:60rem;margin:2rem auto;
padding:0 1rem;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem}
th{background:#f5f5f5}img{max-width:100%;border:1px solid #eee;margin:.5rem 0}
blockquote{border-left:3px solid #d62728;margin:0;padding:.2rem 1rem;background:#fff5f5}
nav a{margin-right:1rem}
"""


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><nav><a href=/reports>reports</a>"
        f"<a href=/review>review</a></nav>{body}</body></html>")


def reports_router(rules: Rules) -> APIRouter:
    # every route `unscoped` (api/access.py): a report covers every conversation of a week
    router = APIRouter(prefix="/reports", dependencies=[Depends(rules.unscoped)])
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")

    @router.get("", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        weeks = service.list_reports(load_settings())
        rows = "".join(
            f"<tr><td><a href='/reports/{r['week']}'>{r['week']}</a></td>"
            f"<td>{r['first_day']}</td><td>{r['turns']:,}</td>"
            f"<td>{html.escape(r['summaries'])}</td></tr>" for r in weeks)
        body = ("<h1>Weekly reports</h1>" + (
            f"<table><tr><th>week</th><th>from</th><th>turns</th><th>summaries</th></tr>"
            f"{rows}</table>" if weeks else
            "<p>No report yet: <code>memory-platform report</code> builds one, and the "
            "weekly schedule writes one every Monday.</p>"))
        return _page("weekly reports", body)

    @router.get("/{week}", response_class=HTMLResponse)
    def week_page(week: str) -> HTMLResponse:
        try:
            found = service.read_report(load_settings(), week)
        except (ValueError, FileNotFoundError) as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        text = found["markdown"]
        for name in found["images"]:
            text = text.replace(f"]({name})", f"](/reports/{week}/{name})")
        return _page(f"report {week}", markdown.render(text))

    @router.get("/{week}/{name}")
    def image(week: str, name: str) -> FileResponse:
        try:
            path = service.image_file(load_settings(), week, name)
        except (ValueError, FileNotFoundError) as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        return FileResponse(path, media_type="image/png")

    return router
