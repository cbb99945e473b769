"""Ingest benchmark: synthetic histories in the real export formats, imported for real.

For each size it prints and records: generation time, parse rate (adapters only, no
database), end-to-end import rate, database bytes per event, and the re-import time of
unchanged files (plus a re-import after `touch`, which must hash but not parse).
"""

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memory_platform import synthetic
from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import Event
from memory_platform.bench.common import external_database, machine, scratch_db, server_url, timed
from memory_platform.ingest import importer as ingest
from memory_platform.ingest.catalog import discover
from memory_platform.ingest.report import ImportReport

# Subfolders generate_history writes, and the adapter that reads each.
SOURCES = (
    ("claude-code", "claude-code"),
    ("claude-ai", "claude-ai"),
    ("chatgpt", "chatgpt"),
    ("gemini", "gemini"),
    ("notes", "notes"),
)


def _targets(root: Path) -> list[tuple[str, Path]]:
    report = ImportReport()
    found = []
    for kind, folder in SOURCES:
        if (root / folder).exists():
            found.extend(discover(kind, root / folder, report))
    return found


def _parse_only(targets: list[tuple[str, Path]]) -> int:
    events = 0
    for kind, file in targets:
        for item in get_adapter(kind).parse(file):
            if isinstance(item, Event):
                events += 1
    return events


def run_size(events: int, workdir: Path, admin_url: str, log: Callable[[str], None],
             confinement: bool = False) -> dict:
    root = workdir / f"history-{events}"
    manifest, gen_s = timed(lambda: synthetic.generate_history(root, events, seed=7))
    log(f"  generated {manifest['events']:,} events in {manifest['files']:,} files "
        f"({gen_s:.1f} s)")
    targets = _targets(root)
    input_bytes = sum(f.stat().st_size for _, f in targets)
    parsed, parse_s = timed(lambda: _parse_only(targets))
    log(f"  parse only: {parsed / parse_s:,.0f} events/s")

    try:
        with scratch_db(admin_url, "ingest") as db:
            size_sql = "SELECT pg_database_size(current_database())"
            with db.connect() as conn:  # migrate outside the timing
                empty_bytes = conn.execute(size_sql).fetchone()[0]
            first, import_s = timed(lambda: ingest.import_path(db, None, root, files=targets))
            log(f"  import: {first.events_new:,} new in {import_s:.1f} s = "
                f"{first.events_new / import_s:,.0f} events/s ({len(first.errors)} errors)")
            with db.connect() as conn:
                conn.execute("VACUUM ANALYZE")
                db_bytes = conn.execute(size_sql).fetchone()[0]
                events_bytes = conn.execute(
                    "SELECT pg_total_relation_size('events')").fetchone()[0]
            again, reimport_s = timed(lambda: ingest.import_path(db, None, root, files=targets))
            for _, file in targets:
                os.utime(file)
            touched, touched_s = timed(lambda: ingest.import_path(db, None, root, files=targets))
            log(f"  re-import unchanged: {reimport_s:.2f} s "
                f"({import_s / reimport_s:,.0f}x faster); "
                f"after touch (hash, no parse): {touched_s:.2f} s")
            assert again.events_new == 0 and touched.events_new == 0
        if confinement:  # bench/confinement.py: the confined reader's cost, same history
            from memory_platform.bench import confinement as confined_bench

            cost = confined_bench.measure(root, lambda: _targets(root), _parse_only,
                                          admin_url, log)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stored = first.events_new
    return {
        "events_target": events,
        "events_generated": manifest["events"],
        "files": manifest["files"],
        "by_source": manifest["by_source"],
        "input_bytes": input_bytes,
        "generate_seconds": round(gen_s, 2),
        "parse_events_per_second": round(parsed / parse_s),
        "import_seconds": round(import_s, 2),
        "import_events_per_second": round(stored / import_s),
        "import_errors": len(first.errors),
        "database_bytes_per_event": round((db_bytes - empty_bytes) / stored, 1),
        "events_table_bytes_per_event": round(events_bytes / stored, 1),
        "reimport_seconds": round(reimport_s, 3),
        "reimport_speedup": round(import_s / reimport_s, 1),
        "reimport_touched_seconds": round(touched_s, 3),
        **({"confinement": cost} if confinement else {}),
    }


def run(sizes: list[int], out: Path, log: Callable[[str], None] = print,
        confinement: bool = False) -> dict:
    results = []
    with tempfile.TemporaryDirectory(prefix="mp-bench-") as tmp:
        workdir = Path(tmp)
        admin_url = server_url(workdir)
        for size in sizes:
            log(f"{size:,} events:")
            results.append(run_size(size, workdir, admin_url, log, confinement))
    report = {
        "benchmark": "ingest",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "database": "external" if external_database() else "embedded pgserver",
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    log("")
    log(format_table(results))
    log(f"\nwritten to {out}")
    return report


def format_table(results: list[dict]) -> str:
    header = ("| events | parse ev/s | import ev/s | DB bytes/event | re-import s | speed-up "
              "| re-import after touch s |")
    lines = [header, "|" + "---|" * 7]
    for r in results:
        lines.append(
            f"| {r['events_generated']:,} | {r['parse_events_per_second']:,} | "
            f"{r['import_events_per_second']:,} | {r['database_bytes_per_event']:,} | "
            f"{r['reimport_seconds']} | {r['reimport_speedup']}x | "
            f"{r['reimport_touched_seconds']} |"
        )
    return "\n".join(lines)
