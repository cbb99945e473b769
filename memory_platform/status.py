"""`memory-platform status` as data: what cairn holds (by source and month, and per machine:
its events and last collection), the vault, its
review backlog, its open lint and wiki findings and the curator's tombstones == archives
invariant per namespace, the days not dreamed yet, and warnings. One function over the
domain services, so every face reports the same thing."""

from datetime import datetime, timedelta, timezone

from memory_platform.collect import run as collector
from memory_platform.curator import archive as curator_archive
from memory_platform.dream.plan import undreamed_span
from memory_platform.ingest import catalog, machines
from memory_platform.recall import findings
from memory_platform.settings import Settings
from memory_platform.store import Database
from memory_platform.vault import queue
from memory_platform.vault.service import primary_namespaces

WATCH_STALE_DAYS = 7


def report(db: Database, settings: Settings, now: datetime | None = None) -> dict:
    """events, conversations, source_files, event_revisions, database_bytes, database,
    by_source {source: {events, conversations, first, last}}, by_month [{month, source,
    events}], machines [{id, name, uid, local, events, last_collection_at}], vault [{namespace, memories, pending_review, oldest_pending_days,
    lint_findings_open, lint_findings_open_by_kind {kind: n}, curator_tombstones,
    curator_archives, curator_purged, curator_invariant_ok}],
    curator_invariant_ok, undreamed {first, last} or None, files_with_errors [{kind, path,
    errors, last_import_at}], warnings [str]."""
    now = now or datetime.now(timezone.utc)
    backlog = {e["namespace"]: e for e in queue.overview(db, now=now)}
    undreamed = undreamed_span(db, settings, now)
    totals = catalog.totals(db)
    invariant = curator_archive.invariant(db)
    pairing = {n["namespace"]: n for n in invariant["by_namespace"]}
    open_findings = findings.open_counts(db)  # lint's and the wiki intake's, by kind
    warnings = []
    for entry in invariant["by_namespace"]:
        if not entry["ok"]:
            warnings.append(f"curator invariant broken in {entry['namespace']}: "
                            f"{entry['tombstones']} tombstones, {entry['archives']} archives")
    for problem in invariant["unpaired"][:5]:
        warnings.append(f"curator: memory {problem['memory_id']} in {problem['namespace']}: "
                        f"{problem['problem']}")
    if settings.claude_projects.exists():
        last = catalog.last_import_under(db, settings.claude_projects.resolve())
        if last is None or last < now - timedelta(days=WATCH_STALE_DAYS):
            when = "never" if last is None else f"last on {last:%Y-%m-%d}"
            warnings.append(
                f"{settings.claude_projects} has not been imported for a week ({when}); "
                "Claude Code deletes transcripts after cleanupPeriodDays (default 30): run "
                f"`memory-platform import claude-code {settings.claude_projects}` or keep "
                "`memory-platform up` running")
    collecting = collector.warning(settings.home)  # a collector runs on this machine
    if collecting:
        warnings.append(collecting)
    return {
        **totals["summary"],
        "by_source": totals["by_source"],
        "by_month": totals["by_month"],
        "machines": machines.overview(db, settings.home),
        "database": "external" if settings.database_url else f"embedded in {settings.pgdata}",
        "vault": [{"namespace": n["name"], "memories": n["active"],
                   "pending_review": backlog.get(n["name"], {}).get("pending", 0),
                   "oldest_pending_days": round(backlog[n["name"]]["age_seconds"] / 86400, 1)
                   if n["name"] in backlog else None,
                   "lint_findings_open": sum(open_findings.get(n["name"], {}).values()),
                   "lint_findings_open_by_kind": open_findings.get(n["name"], {}),
                   "curator_tombstones": pairing.get(n["name"], {}).get("tombstones", 0),
                   "curator_archives": pairing.get(n["name"], {}).get("archives", 0),
                   "curator_purged": pairing.get(n["name"], {}).get("purged", 0),
                   "curator_invariant_ok": pairing.get(n["name"], {}).get("ok", True)}
                  for n in primary_namespaces(db)],
        "curator_invariant_ok": invariant["ok"],
        "undreamed": {"first": undreamed[0], "last": undreamed[1]} if undreamed else None,
        "files_with_errors": catalog.files_with_errors(db),
        "warnings": warnings,
    }
