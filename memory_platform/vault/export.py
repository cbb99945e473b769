"""`memory-platform vault export`: a namespace as `<ns>.json` and `<ns>.md`.

Every memory of the namespace, whatever its status (read in one snapshot, page by page, no
cap; the count is asserted), each with its state: `current` (holds now), `superseded` (a
later fact replaced it: valid_to and superseded_by), `expired` (valid_to without a
successor), `archived`, `cut` / `purged` (a curator's tombstone: its text is in the
curator's archive until the purge), or for a shadow namespace its review state (`pending`,
`approved`, `skipped`). Files are written whole through the confined writer: a new
temporary file (O_EXCL, a random name) in the target folder, then renamed over the name, so
a symlink planted at the temporary name or the target is replaced, never written through.
"""

import json
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.confined import Root
from memory_platform.store import Database
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import memories as vault

STATES = ("current", "superseded", "expired", "archived", "cut", "purged", "pending",
          "approved", "skipped")


def memory_state(row: dict) -> str:
    if row["status"] in ("archived", "cut", "purged"):
        return row["status"]
    if row["superseded_by"] is not None:
        return "superseded"
    if row["valid_to"] is not None:
        return "expired"
    if row["review"] is not None:
        return row["review"]
    return "current"


def _day(value) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d") if value else "?"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def to_markdown(namespace: str, rows: list[dict], counts: dict[str, int],
                exported_at: datetime) -> str:
    kind, _ = namespace_store.parse_namespace(namespace)
    lines = [f"# Vault: {namespace}", "",
             f"Exported {exported_at.isoformat(timespec='seconds')}: {len(rows)} memories ("
             + ", ".join(f"{n} {state}" for state, n in counts.items() if n) + ")."]
    if kind != "primary":
        lines.append(f"A shadow namespace ({kind}): entries awaiting or past review.")
    titles = {"current": "Current facts", "superseded": "Superseded (no longer true)",
              "expired": "Expired", "archived": "Archived",
              "cut": "Cut by the curator (restorable)", "purged": "Purged by the curator",
              "pending": "Pending review",
              "approved": "Approved (promoted)", "skipped": "Skipped"}
    for state in STATES:
        group = [r for r in rows if r["state"] == state]
        if not group:
            continue
        lines += ["", f"## {titles[state]} ({len(group)})", ""]
        for r in group:
            text = _one_line(r["text"])
            details = [f"#{r['id']}", r["category"], r["source"]]
            if state in ("superseded", "expired"):
                text = f"~~{text}~~"
                details.append(f"valid {_day(r['valid_from'])} to {_day(r['valid_to'])}")
                if r["superseded_by"] is not None:
                    details.append(f"superseded by #{r['superseded_by']}")
            else:
                details.append(f"since {_day(r['valid_from'])}")
            if r["promoted_from"] is not None:
                details.append(f"promoted from #{r['promoted_from']}")
            if r["review_note"]:
                details.append(f"note: {_one_line(r['review_note'])}")
            lines.append(f"- {text} _({'; '.join(details)})_")
    return "\n".join(lines) + "\n"


def export_namespace(db: Database, namespace: str, out_dir: Path) -> dict:
    """Write `<namespace>.json` and `<namespace>.md` into `out_dir` (created if missing).
    Returns {namespace, total, counts, json, markdown}."""
    rows, total = vault.list_all(db, namespace, status=None)
    exported_at = datetime.now(timezone.utc)
    for row in rows:
        row["state"] = memory_state(row)
    counts = {state: sum(1 for r in rows if r["state"] == state) for state in STATES}
    out_dir = Path(out_dir).expanduser()
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{namespace}.json", out_dir / f"{namespace}.md"
    document = {"namespace": namespace, "exported_at": exported_at.isoformat(),
                "total": total, "counts": counts, "memories": rows}
    root = Root(out_dir)
    root.write(json_path.name, (json.dumps(document, default=str, ensure_ascii=False,
                                           indent=1) + "\n").encode("utf-8"))
    root.write(md_path.name, to_markdown(namespace, rows, counts, exported_at).encode("utf-8"))
    return {"namespace": namespace, "total": total, "counts": counts,
            "json": str(json_path), "markdown": str(md_path)}
