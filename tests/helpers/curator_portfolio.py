"""The curator's and the orchard's records for the analytics tests, made by their own
services (a scripted model, the orchard's writes), and what PostgreSQL says the marts
`curator_history` and `portfolio_weeks` should hold, counted with SQL of its own.

Planted at the real clock, so everything counts in this ISO week (delta's cuts are executed
with a clock 20 days back, which only ends their restore window so the purge takes them):
- acme: a verdict executed (one cut contradicted, one duplicate, a merge staged), the
  duplicate restored;
- beta: a verdict refused by the breaker, one refused as invalid, one dry run;
- gamma: a verdict refused at execution (a memory edited since: fingerprint);
- delta: two stale cuts executed with a window that has ended, then purged.
- orchard: four projects (active with two milestones and a cairn link, blocked, paused, an
  archived idea), snapshotted for this week.
"""

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers.curator import ACME, DUPLICATE, answering, good_plan, make_repo, seed, stale_cuts
from memory_platform.analytics import service
from memory_platform.curator import archive
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.execute import CuratorRefused, execute
from memory_platform.curator.propose import propose
from memory_platform.days import week_label
from memory_platform.defs.analytics.assets import weekly_report
from memory_platform.llm import ScriptedProvider
from memory_platform.orchard import projects, snapshots
from memory_platform.vault import service as vault_service
from memory_platform.vault.tokens import Scope

CURATOR_WEEK = date(2026, 11, 29)  # a curator partition (a Sunday); any would do
SMALL = [f"Fact {i} about the beta service's deployment." for i in range(5)]
INVALID = {"cuts": [{"handle": 1, "reason": "stale", "evidence": [
    {"file": "no/such/file.txt", "line": 1, "note": "not there"}]}]}
HISTORY_COLUMNS = ("runs", "dry_runs", "executed_runs", "refused_runs", "refused_breaker",
                   "refused_fingerprint", "refused_invalid_verdict", "memories_listed", "cuts",
                   "cuts_stale", "cuts_duplicate", "cuts_contradicted", "cuts_wrong",
                   "cuts_secret", "restores", "purges", "archived_at_week_end")


def _verdict(db, namespace: str, plan, config: CuratorConfig, repo: Path, *, week=CURATOR_WEEK,
             dry_run: bool = False):
    model = ScriptedProvider(answers=answering(plan))
    return propose(db, namespace, week, agent=lambda: model, dagster_run_id=f"plant-{namespace}",
                   config=config, repo=repo, dry_run=dry_run)


def plant_curator(db, root: Path) -> dict:
    """The curator records above; returns {memory id: reason} of the restored cuts (a
    restore deletes the archive row that held the reason)."""
    repo = make_repo(root)["path"]
    config = CuratorConfig(repos={ns: repo for ns in ("acme", "beta", "gamma", "delta")})
    acme = seed(db, "acme", ACME, vectors=False)
    for namespace in ("beta", "gamma", "delta"):
        seed(db, namespace, SMALL, vectors=False)

    assert _verdict(db, "acme", good_plan, config, repo).status == "proposed"
    assert execute(db, "acme", CURATOR_WEEK, dagster_run_id="plant-acme", config=config).cuts == 2
    restored = archive.restore(db, acme[ACME.index(DUPLICATE)], actor="test")

    assert _verdict(db, "beta", stale_cuts(3), config, repo).refusal == "breaker"  # 3 > 2 of 5
    assert _verdict(db, "beta", lambda _: INVALID, config, repo,
                    week=CURATOR_WEEK - timedelta(days=7)).refusal == "invalid_verdict"
    assert _verdict(db, "beta", stale_cuts(1), config, repo, week=CURATOR_WEEK + timedelta(days=7),
                    dry_run=True).status == "proposed"

    assert _verdict(db, "gamma", stale_cuts(1), config, repo).status == "proposed"
    with db.connect() as conn:
        gamma_first = conn.execute("SELECT min(id) FROM memories WHERE namespace = 'gamma'"
                                   ).fetchone()[0]
    vault_service.edit(db, Scope.everything(), gamma_first, actor="test", category="user")
    with pytest.raises(CuratorRefused, match="changed since"):
        execute(db, "gamma", CURATOR_WEEK, dagster_run_id="plant-gamma", config=config)

    assert _verdict(db, "delta", stale_cuts(2), config, repo).status == "proposed"
    long_ago = datetime.now(timezone.utc) - timedelta(days=20)  # its window has ended
    assert execute(db, "delta", CURATOR_WEEK, dagster_run_id="plant-delta", config=config,
                   now=long_ago).cuts == 2
    assert len(archive.purge(db, purged_by="test")) == 2
    return {restored["id"]: restored["reason"]}


def plant_portfolio(db, cairn_project: str) -> date:
    """Four orchard projects and this week's snapshot; returns the week's Monday."""
    everyone = Scope.everything()
    atlas = projects.add(db, everyone, name="Atlas", namespace="work", actor="test",
                         priority=1, cairn_projects=[cairn_project])
    projects.add(db, everyone, name="Beacon", namespace="work", actor="test", priority=2,
                 status="blocked", blockers=["the vendor's API key", "a design review"])
    projects.add(db, everyone, name="Compass", namespace="work", actor="test", priority=3,
                 status="paused", deadline="2027-01-15")
    drift = projects.add(db, everyone, name="Drift", namespace="work", actor="test",
                         status="idea")
    for what in ("the parser reads every format", "the importer resumes"):
        projects.milestone(db, everyone, atlas["id"], what, actor="test")
    projects.edit(db, everyone, drift["id"], actor="test", archived=True)
    monday = projects.week_start(projects.utc_today())
    snapshots.take_snapshot(db, monday, run_id="plant")
    return monday


def expected_curator_history(db, restored_reasons: dict[int, str]) -> dict:
    """{(week, namespace): {column: count}} from PostgreSQL: runs and refusals from
    curator_runs, cuts from the 'cut' audit rows (reasons from the archive, the purge
    records, or `restored_reasons`), restores from the 'curator_restore' audit rows,
    purges from curator_purges, and what is restorable now (this week's end is ahead)."""
    found: dict = {}

    def add(week, namespace, column, n=1):
        row = found.setdefault((week, namespace), dict.fromkeys(HISTORY_COLUMNS, 0))
        row[column] += n

    week = "date_trunc('week', {} AT TIME ZONE 'UTC')::date"
    with db.connect() as conn:
        for asked, decided, namespace, status, dry_run, refusal, listed in conn.execute(
                f"""SELECT {week.format('created_at')}, {week.format('decided_at')}, namespace,
                           status, dry_run, refusal, listed FROM curator_runs""").fetchall():
            add(asked, namespace, "dry_runs" if dry_run else "runs")
            if status == "executed":
                add(decided, namespace, "executed_runs")
                add(decided, namespace, "memories_listed", listed)
            elif status == "refused" and not dry_run:
                add(decided, namespace, "refused_runs")
                add(decided, namespace, f"refused_{refusal}")
        cuts = conn.execute(
            f"""SELECT {week.format('v.at')}, m.namespace, m.id,
                       coalesce(a.reason, p.reason)
                FROM vault_audit v JOIN memories m ON m.id = v.memory_id
                LEFT JOIN curator_archive a ON a.memory_id = m.id
                LEFT JOIN curator_purges p ON p.memory_id = m.id
                WHERE v.action = 'cut'""").fetchall()
        for cut_week, namespace, memory_id, reason in cuts:
            add(cut_week, namespace, "cuts")
            add(cut_week, namespace, f"cuts_{reason or restored_reasons[memory_id]}")
        for restore_week, namespace in conn.execute(
                f"""SELECT {week.format('v.at')}, m.namespace FROM vault_audit v
                    JOIN memories m ON m.id = v.memory_id
                    WHERE v.action = 'curator_restore'""").fetchall():
            add(restore_week, namespace, "restores")
        for purge_week, namespace in conn.execute(
                f"SELECT {week.format('purged_at')}, namespace FROM curator_purges").fetchall():
            add(purge_week, namespace, "purges")
        this_week = conn.execute(f"SELECT {week.format('now()')}").fetchone()[0]
        for namespace, archived in conn.execute(
                "SELECT namespace, count(*) FROM curator_archive GROUP BY 1").fetchall():
            add(this_week, namespace, "archived_at_week_end", archived)
    return found


def expected_portfolio(db) -> list[tuple]:
    """The marts' portfolio_weeks columns, from orchard_snapshots, by week and project."""
    with db.connect() as conn:
        return [tuple(r) for r in conn.execute(
            """SELECT week, project_id, name, status, priority, cardinality(blockers),
                      milestones, archived, last_active,
                      least(week + 6, (taken_at AT TIME ZONE 'UTC')::date) - last_active
               FROM orchard_snapshots ORDER BY week, project_id""").fetchall()]


PORTFOLIO_COLUMNS = ("week, project_id, project, status, priority, blockers, milestones, "
                     "archived, last_active, days_since_active")


def check_curator_and_portfolio(world, build, tmp_path: Path) -> None:
    """Curator records (runs executed and refused, cuts, a restore, purges) and an orchard
    snapshot made by their services; `build` (test_analytics.py's) of this week: every check
    passes, the marts hold what PostgreSQL holds, the report shows them and is the same bytes
    when rebuilt."""
    db, settings = world["db"], world["settings"]
    restored = plant_curator(db, tmp_path)
    with db.connect() as conn:
        cairn_project = conn.execute(
            "SELECT project FROM events WHERE project IS NOT NULL GROUP BY project "
            "ORDER BY count(*) DESC, project LIMIT 1").fetchone()[0]
    monday = plant_portfolio(db, cairn_project)
    run = build(world, None, partition_key=monday.isoformat())
    assert run.success
    assert [c.check_name for c in run.get_asset_check_evaluations() if not c.passed] == []

    # curator_history per week and namespace: the database's counts, zero rows aside
    expected = expected_curator_history(db, restored)
    _, rows = service.run_sql(settings, f"SELECT week, namespace, {', '.join(HISTORY_COLUMNS)}"
                                        " FROM marts.curator_history")
    history = {(r[0], r[1]): dict(zip(HISTORY_COLUMNS, map(int, r[2:]), strict=True))
               for r in rows}
    assert {k: v for k, v in history.items() if any(v.values())} == expected

    def total(namespace: str, *columns: str) -> list[int]:
        return [sum(v[c] for (_, n), v in history.items() if n == namespace) for c in columns]

    assert total("acme", "cuts_contradicted", "cuts_duplicate", "restores",
                 "archived_at_week_end", "executed_runs") == [1, 1, 1, 1, 1]
    assert total("beta", "runs", "dry_runs", "refused_breaker",
                 "refused_invalid_verdict") == [2, 1, 1, 1]
    assert total("gamma", "runs", "refused_fingerprint", "cuts") == [1, 1, 0]
    assert total("delta", "cuts_stale", "purges", "archived_at_week_end") == [2, 2, 0]

    # portfolio_weeks: the snapshot's rows, with days since the last turn in cairn
    _, rows = service.run_sql(settings, f"SELECT {PORTFOLIO_COLUMNS} FROM marts.portfolio_weeks "
                                        "ORDER BY week, project_id")
    assert [tuple(r) for r in rows] == expected_portfolio(db)
    assert [(r[2], r[3], r[5], r[6]) for r in rows] == [
        ("Atlas", "active", 0, 2), ("Beacon", "blocked", 2, 0), ("Compass", "paused", 0, 0),
        ("Drift", "idea", 0, 0)]
    assert rows[0][8] is not None and rows[0][9] > 0  # linked to the demo's turns

    # the report of this week: the curator's numbers and the portfolio, deterministic
    folder = settings.reports_folder / week_label(monday)
    numbers = json.loads((folder / "report.json").read_text())["numbers"]
    this_week = [v for (w, _), v in expected.items() if w == monday]
    for key in ("cuts", "restores", "refused_runs", "purges", "runs"):
        assert numbers["curator"]["totals"][key] == sum(v[key] for v in this_week), key
    assert numbers["portfolio"]["by_status"] == [
        {"status": "active", "projects": 1}, {"status": "blocked", "projects": 1},
        {"status": "paused", "projects": 1}]
    markdown = (folder / "report.md").read_text()
    assert ("5 verdicts asked (and 1 as dry runs); 2 executed, 3 refused (1 by the circuit "
            "breaker, 1 by a changed namespace, 1 by an invalid verdict). 4 memories cut of "
            "15 listed (26.7%): stale 2, duplicate 1, contradicted 1; 1 restored, 2 purged, "
            "1 still restorable at the week's end.") in markdown
    assert "3 projects: 1 active, 1 blocked, 1 paused." in markdown
    assert "Milestones this week: Atlas (2)." in markdown
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = build(world, None, selection=[weekly_report.key],
                  partition_key=monday.isoformat())
    assert again.success
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files
