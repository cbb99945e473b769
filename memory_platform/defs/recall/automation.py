"""recall's triggers: the wiki follows the vault and takes people's edits back; lint runs
after each dream and weekly.

`wiki_sensor` (every 30 s) keeps one partition of `vault_wiki` per primary namespace and
requests a build of a namespace when its vault moved (its latest audit id: any add, edit,
archive, promotion, supersede or curator cut, whichever face or job made it) or a file of
its wiki differs from what the build last wrote (a person's edit). The run key comes from
that state, so a replayed tick requests nothing twice; the cursor (versioned JSON) keeps
the state last requested per namespace.
"""

import hashlib
import json

import dagster as dg

from memory_platform.defs.dream.jobs import dream_job
from memory_platform.defs.recall.jobs import build_wiki_job, lint_vault_job
from memory_platform.recall.wiki import dirty_files, vault_fingerprints
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import TRIGGER_TAG, WIKI_PARTITIONS_NAME, wiki_namespaces

CURSOR_VERSION = 1
WEEKLY_LINT_CRON = "0 4 * * 1"


def parse_cursor(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    data = json.loads(raw)
    if data.get("v") != CURSOR_VERSION:
        return {}  # an older cursor: start over (run keys still dedupe)
    return dict(data["state"])


def dump_cursor(state: dict[str, str]) -> str:
    return json.dumps({"v": CURSOR_VERSION, "state": state}, sort_keys=True)


@dg.sensor(
    name="wiki_sensor",
    minimum_interval_seconds=30,
    job=build_wiki_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Rebuilds a namespace's wiki after its vault changed, and takes people's "
    "edits to wiki files back into the vault.",
)
def wiki_sensor(context: dg.SensorEvaluationContext,
                database: DatabaseResource) -> dg.SensorResult | dg.SkipReason:
    db = database.database()
    home = database.settings().home
    audit = vault_fingerprints(db)
    existing = set(context.instance.get_dynamic_partitions(WIKI_PARTITIONS_NAME))
    new = sorted(set(audit) - existing)
    previous = parse_cursor(context.cursor)
    state, requests = dict(previous), []
    for namespace, last_audit in sorted(audit.items()):
        dirty = dirty_files(db, namespace, home=home)
        key = hashlib.sha256(json.dumps([last_audit, dirty]).encode()).hexdigest()[:16]
        if previous.get(namespace) == key:
            continue
        state[namespace] = key
        requests.append(dg.RunRequest(
            run_key=f"wiki:{namespace}:{key}", partition_key=namespace,
            tags={TRIGGER_TAG: "wiki-sensor"}))
    if not requests and not new:
        return dg.SkipReason(f"{len(audit)} namespace wiki(s) up to date")
    return dg.SensorResult(
        run_requests=requests, cursor=dump_cursor(state),
        dynamic_partitions_requests=[wiki_namespaces.build_add_request(new)] if new else [])


@dg.run_status_sensor(
    name="lint_after_dream_sensor",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[dream_job],
    request_job=lint_vault_job,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Lints the vault after each successful dream run.",
)
def lint_after_dream_sensor(context: dg.RunStatusSensorContext) -> dg.RunRequest:
    return dg.RunRequest(run_key=f"lint-after:{context.dagster_run.run_id}",
                         tags={TRIGGER_TAG: "after-dream"})


@dg.schedule(cron_schedule=WEEKLY_LINT_CRON, job=lint_vault_job,
             default_status=dg.DefaultScheduleStatus.RUNNING)
def weekly_lint_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """Mondays at 04:00 UTC: lint every primary namespace (findings only, no change)."""
    when = context.scheduled_execution_time
    return dg.RunRequest(run_key=f"weekly-lint:{when.date().isoformat() if when else 'now'}",
                         tags={TRIGGER_TAG: "weekly"})
