"""The dashboard's orchard page (GET /review/orchard): this week's ranking with its reasons
and evidence, every project in the caller's scope with a form to edit it or record a
milestone, a form to add one, and (for an unscoped caller) the proposals discovery made,
to accept or dismiss.

The page is rendered here; its forms are sent by static/orchard.js as JSON to the REST
routes (api/orchard.py), whose services hold the rules (an agent's cookie gets the agent
rules there; the ranking and the list show only what the caller's scope may read, masked:
orchard/reading.py). JSON and not form posts: a cross-site page
cannot send a JSON request without a CORS preflight this app never grants, so an open
loopback server takes no edit from another site.
"""

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse

from memory_platform.api.access import Caller, Rule, Rules
from memory_platform.api.dashboard import pages
from memory_platform.orchard import discovery, projects, week
from memory_platform.store import Database


def orchard_page_router(database: Database, rules: Rules) -> APIRouter:
    router = APIRouter(prefix="/review", include_in_schema=False)
    # `scoped` (api/access.py); a browser without a token goes to the login form
    page_caller = rules.page(Rule.SCOPED, "/review/login")

    @router.get("/orchard", response_class=HTMLResponse)
    def orchard_page(caller: Annotated[Caller, Depends(page_caller)]) -> HTMLResponse:
        # The plain ranking: a page load never waits for (or pays) a model.
        ranking = week.week(database, caller.scope)
        listed = projects.list_projects(database, caller.scope, include_archived=True)
        proposals = (discovery.list_proposals(database, caller.scope)
                     if caller.scope.unrestricted else None)
        return pages.page("orchard.html", ranking=ranking, projects=listed,
                          proposals=proposals, statuses=projects.STATUSES,
                          scope=caller.scope.describe(),
                          # /review/event opens any turn for an unscoped caller only
                          link_turns=caller.scope.unrestricted)

    return router
