"""What a caller may read of cairn through the vault: the source turns a memory cites.

cairn is every conversation, verbatim, and it is not split by namespace. A caller limited
to namespaces (a scoped token) therefore reads cairn only through a memory of its own: the
turns that memory cites (`source_event_ids`), nothing around them, with credentials masked
by `privacy.masking` (the text an LLM saw when it proposed the memory was masked too). An
unrestricted caller (the admin token, open loopback) reviewing an entry gets the cited
turn with the turns around it, also masked: the review page shows what a fact rests on,
and a dashboard on a shared screen must not show a key. Verbatim text stays in cairn's own
routes (`/events`), which scoped tokens cannot use.

This is the rule for the dashboard's `/review/event/{id}`; enforced here, not in the
route, so every face that shows a source turn applies it.
"""

from memory_platform.privacy.egress import outgoing_counted, outgoing_value
from memory_platform.query import reading
from memory_platform.store import Database
from memory_platform.vault import service
from memory_platform.vault.tokens import Scope


def _masked(event: dict, personal: bool) -> tuple[dict, int]:
    # the text, and the attrs beside it (a tool's input, a title). query.reading masked the
    # credentials already (and counted them); this adds personal data for a sensitive memory
    text, hits = outgoing_counted(event.get("text"), personal=personal)
    return {**event, "text": text,
            "attrs": outgoing_value(event.get("attrs"), personal=personal)}, hits


def source_turn(db: Database, scope: Scope, event_id: int, *, memory_id: int | None = None,
                context: int = 3) -> dict:
    """{"event", "before", "after", "masked", "limited"} for a source turn, as `scope` may
    see it (see the module docstring). A scoped caller must name a memory of its scope that
    cites `event_id`: otherwise Forbidden (the event is not theirs to read) or NotFound (no
    such memory in scope). NotFound too for an event that does not exist."""
    if scope.unrestricted:
        found = reading.get_event(db, event_id, before=context, after=context)
        if found is None:
            raise service.NotFound(f"no event with id {event_id}")
        limited, personal, masked = False, False, found["masked"]
    else:
        if memory_id is None:
            raise service.Forbidden("a scoped token reads a source turn only through the "
                                    "memory that cites it (?memory=<id>)")
        memory = service.get(db, scope, memory_id)
        personal = bool(memory.get("sensitive"))
        cited = [int(i) for i in memory["source_event_ids"] or []]
        if event_id not in cited:
            raise service.Forbidden(f"memory {memory_id} does not cite event {event_id}; a "
                                    f"scoped token opens only the turns its own entries cite")
        turns, masked = [], 0
        for cited_id in dict.fromkeys(cited):
            found = reading.get_event(db, cited_id)
            if found is not None:
                turns.append(found["event"])
                masked += found["masked"]
        main = next((t for t in turns if t["event_id"] == event_id), None)
        if main is None:
            raise service.NotFound(f"no event with id {event_id}")
        found = {"event": main,
                 "before": [t for t in turns if _order(t) < _order(main)],
                 "after": [t for t in turns if _order(t) > _order(main)]}
        limited = True
    shown: dict[str, object] = {}
    for key in ("before", "after"):
        rows = []
        for turn in sorted(found[key], key=_order):
            row, hits = _masked(turn, personal)
            masked += hits
            rows.append(row)
        shown[key] = rows
    event, hits = _masked(found["event"], personal)
    return {"event": event, **shown, "masked": masked + hits, "limited": limited}


def _order(turn: dict) -> tuple:
    return (str(turn["occurred_at"]), int(turn["event_id"]))
