"""The dream digest: a short markdown report of what a dream run learned, what it rejected as
already known, the contradictions it flagged, and how big and how old the review backlog is
(a gate nobody looks at fails silently: the backlog age is the alarm). It also lists the
curator's last week: its cuts per namespace with reasons and the restore command, and,
loudly, any run that was refused (breaker, changed namespace, invalid verdict)."""

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from memory_platform.privacy.egress import outgoing
from memory_platform.store import Database
from memory_platform.store import curator as curator_store
from memory_platform.store import curator_archive as curator_archive_store
from memory_platform.store import dream as store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import recall as recall_store

MAX_LISTED = 20  # per section; the counts are always complete
CURATOR_DAYS = 7


def _q(text) -> str:
    """A stored text as the digest quotes it: one line, through privacy.egress with personal
    data masked too (the digest goes to a file and a webhook, and names no sensitivity)."""
    return outgoing(" ".join(str(text or "").split()), personal=True)


class NotifyError(RuntimeError):
    """The webhook refused the digest or could not be reached (the file is written first)."""


def build_digest(db: Database, days: Sequence[date], *, run_id: str,
                 now: datetime | None = None) -> tuple[str, dict]:
    """(markdown, figures) for the dream output of `days`."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        staged = store.staged_in_days(conn, days)
        verdicts = store.rejected_in_days(conn, days)
        counts = store.candidate_counts_in(conn, days)
        backlog = namespace_store.backlog(conn)
        since = now - timedelta(days=CURATOR_DAYS)
        cuts = curator_archive_store.list_archives(conn, since=since)
        refused = [r for r in curator_store.list_runs(conn, since=since, refused_only=True)
                   if not r["dry_run"]]
        findings = recall_store.open_counts(conn)
    rejected = [v for v in verdicts if v["verdict"] in ("duplicate", "same_fact")]
    contradictions = [v for v in verdicts if v["verdict"] == "contradiction"]
    pending = sum(b["pending"] for b in backlog)
    oldest = min((b["oldest_created_at"] for b in backlog if b["oldest_created_at"]),
                 default=None)
    oldest_days = round((now - oldest).total_seconds() / 86400, 1) if oldest else None
    span = f"{days[0]}" if len(days) == 1 else f"{days[0]} .. {days[-1]}"

    lines = [f"# Dream digest {span}", "",
             f"Run `{run_id}`, {now.strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    lines.append(
        f"Candidates: {sum(counts.values())} proposed by the model; "
        f"{counts.get('proposed', 0)} scored high enough, "
        f"{counts.get('below_threshold', 0)} below the threshold, "
        f"{counts.get('rejected_secret', 0)} rejected for containing a credential."
    )
    lines += ["", f"## Learned (staged for review): {len(staged)}"]
    lines += [f"- [{m['namespace']}] {_q(m['text'])} (score {m['score']}, {m['category']})"
              for m in staged[:MAX_LISTED]]
    lines += _more(len(staged))
    lines += ["", f"## Rejected as already known: {len(rejected)}"]
    lines += [f"- {_q(v['text'])}  \n  known as: {_q(v['neighbour_text'])} "
              f"({v['verdict']}, similarity {_sim(v['similarity'])})"
              for v in rejected[:MAX_LISTED]]
    lines += _more(len(rejected))
    lines += ["", f"## Contradictions flagged: {len(contradictions)}"]
    lines += [f"- new: {_q(v['text'])}  \n  old: {_q(v['neighbour_text'])}  \n  {_q(v['reason'])}"
              for v in contradictions[:MAX_LISTED]]
    lines += _more(len(contradictions))
    lines += ["", "## Review backlog",
              f"{pending} pending" + (f"; the oldest waits for {oldest_days} days" if oldest
                                      else "") + "."]
    lines += [f"- {b['namespace']}: {b['pending']}" for b in backlog if b["pending"]]
    lines += _curator_section(cuts, refused)
    open_findings = sum(n for kinds in findings.values() for n in kinds.values())
    lines += ["", f"## Lint findings waiting for review: {open_findings}"]
    lines += [f"- {ns}: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
              for ns, kinds in sorted(findings.items())]
    figures = {
        "staged": len(staged),
        "rejected_as_known": len(rejected),
        "contradictions": len(contradictions),
        "candidates_by_status": counts,
        "backlog_pending": pending,
        "backlog_oldest_days": oldest_days,
        "lint_findings_open": open_findings,
        "curator_cuts_last_week": len(cuts),
        "curator_refused_last_week": len(refused),
    }
    return "\n".join(lines) + "\n", figures


def _curator_section(cuts: list[dict], refused: list[dict]) -> list[str]:
    lines = ["", f"## Curator, last {CURATOR_DAYS} days: {len(cuts)} restorable cuts"]
    if refused:
        lines.append(f"**{len(refused)} curator run(s) REFUSED: nothing was cut in them.**")
        lines += [f"- REFUSED {r['namespace']} week {r['week']} ({r['refusal']}): "
                  f"{_q(r['refusal_detail'])}" for r in refused[:MAX_LISTED]]
        lines += _more(len(refused))
    by_namespace: dict[str, list[dict]] = {}
    for cut in cuts:
        by_namespace.setdefault(cut["namespace"], []).append(cut)
    for namespace in sorted(by_namespace):
        items = by_namespace[namespace]
        lines.append(f"- {namespace}: {len(items)} cut")
        lines += [f"  - #{c['memory_id']} ({c['reason']}) {_q(c['text'])}"
                  f"  \n    restore until {c['restore_until']:%Y-%m-%d}: "
                  f"`memory-platform curator restore {c['memory_id']}`"
                  for c in items[:MAX_LISTED]]
        lines += ["  " + m for m in _more(len(items))]
    return lines


def _sim(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _more(n: int) -> list[str]:
    return [f"- … and {n - MAX_LISTED} more"] if n > MAX_LISTED else []


def write_digest(folder: Path, days: Sequence[date], markdown: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    name = f"dream-{days[0]}" + (f"..{days[-1]}" if len(days) > 1 else "") + ".md"
    path = folder / name
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(markdown, encoding="utf-8")
    tmp.replace(path)
    return path


def post_webhook(url: str, markdown: str, *, timeout: float = 10.0) -> int:
    """POST {"text": markdown} (the shape Slack-style incoming webhooks take). Raises
    NotifyError on anything but a 2xx."""
    body = json.dumps({"text": markdown}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        raise NotifyError(f"digest webhook {url} answered {exc.code}: {exc.reason}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise NotifyError(f"digest webhook {url} unreachable: {exc}") from exc
