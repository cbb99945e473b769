"""Rendering the dashboard: Jinja2 templates (templates/) over the CSS and JS in static/,
which the app serves itself (no CDN: the dashboard works offline and loads nothing from
elsewhere).

Auto-escaping is on for every template: memory text, reasons and conversation turns are
user data, and a memory saying `<script>` must show as text, never run.
"""

import hashlib
from pathlib import Path

import jinja2
from fastapi.responses import HTMLResponse

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
STATIC_URL = "/review/static"


def _asset_version() -> str:
    """A hash of the static files, appended to their URLs: a browser holding an older
    review.js fetches the new one after an upgrade instead of running stale code."""
    digest = hashlib.sha256()
    for path in sorted(STATIC_DIR.iterdir()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def age(seconds: float) -> str:
    """How old, in its largest whole unit: `3 d`, `5 h`, `12 min`, `40 s`."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


_env = jinja2.Environment(
    loader=jinja2.PackageLoader("memory_platform.api.dashboard", "templates"),
    autoescape=True,  # never off: see the module docstring
    undefined=jinja2.StrictUndefined,  # a misspelt field fails the request, not blank HTML
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.filters["age"] = age
_env.globals.update(static=STATIC_URL, asset_version=_asset_version())


def page(template: str, **context) -> HTMLResponse:
    """A full page (templates/<template>, which extends base.html)."""
    return HTMLResponse(_env.get_template(template).render(**context))


def cards(entries: list[dict], targets: list[str]) -> str:
    """The review cards of `entries` (vault.queue.pending's shape), each with a select of
    the primary namespaces `targets` it may be approved into: for the first page and the
    ones the page fetches as the reviewer scrolls."""
    return _env.get_template("cards.html").render(entries=entries, targets=targets)
