"""recall: the vault's markdown wiki and its lint, as assets.

`vault_wiki` has one partition per primary namespace (added by `wiki_sensor`, which also
launches it when the vault or a wiki file changed); `vault_lint` runs after each successful
dream and weekly. Both call recall's plain functions; neither lets a finding change the
vault (findings wait for a person at the review gate).
"""

import dagster as dg

from memory_platform.llm import CallRecorder
from memory_platform.llm.providers import llm_not_configured
from memory_platform.recall import classify, intake, lint
from memory_platform.resources import DatabaseResource, LLMFactory
from memory_platform.resources.common import LLM_POOL, wiki_namespaces
from memory_platform.vault.service import primary_namespaces


@dg.asset(group_name="recall", kinds={"markdown", "postgres", "python"},
          partitions_def=wiki_namespaces)
def vault_wiki(context: dg.AssetExecutionContext, database: DatabaseResource,
               llm: dg.ResourceParam[LLMFactory]) -> dg.MaterializeResult:
    """The markdown wiki of a primary namespace, one partition per namespace (key: its
    name): `$MEMORY_PLATFORM_HOME/wiki/<namespace>/` with INDEX.md (topics and standing
    facts, under 200 lines), topics/<topic>.md (current facts with their dates and a
    provenance link, superseded ones under History) and episodes/<YYYY-MM>.md. Each run
    first takes in people's edits to those files (audited hand edits, archives for deleted
    lines, new memories for added ones; anything unmappable becomes a finding and its file
    is kept as it is), classifies memories written before topics existed, then rewrites
    what changed. Deterministic: the same vault gives the same bytes. Tables `wiki_files`,
    `lint_findings` (unmappable edits), `memories`, `vault_audit`."""
    db = database.database()
    settings = database.settings()
    backfilled = classify.backfill(db)
    figures: dict = {"backfill": dg.MetadataValue.json(backfilled)}
    for namespace in context.partition_keys:
        if settings.classifier_llm and llm_not_configured() is None:
            recorder = CallRecorder(llm.provider, db=db, run_id=context.run.run_id)
            figures[f"{namespace}_classifier"] = dg.MetadataValue.json(
                classify.refine_unsorted(db, recorder, namespace))
        done = intake.sync(db, namespace, home=settings.home)
        context.log.info(f"wiki {namespace}: {done}")
        figures[namespace] = dg.MetadataValue.json(done)
    return dg.MaterializeResult(metadata=figures)


@dg.asset(group_name="recall", kinds={"postgres", "pgvector", "python"}, pool=LLM_POOL)
def vault_lint(context: dg.AssetExecutionContext, database: DatabaseResource,
               llm: dg.ResourceParam[LLMFactory]) -> dg.MaterializeResult:
    """Lint of every primary namespace's current facts: contradictions (same subject,
    different significant tokens, or the dedup judge's verdict when an LLM is configured),
    stale claims, orphans and near-duplicates, each a row of `lint_findings` with its
    evidence, waiting for a person (supersede, archive, keep). Never changes a memory; a
    finding whose memories changed since is closed as obsolete. Runs after each successful
    dream (`lint_after_dream_sensor`) and weekly (`weekly_lint_schedule`)."""
    db = database.database()
    names = [n["name"] for n in primary_namespaces(db)]
    recorder = None
    if llm_not_configured() is None:
        recorder = CallRecorder(llm.provider, db=db, run_id=context.run.run_id)
    reports = lint.lint(db, names, llm=recorder, run_id=context.run.run_id)
    found: dict[str, int] = {}
    for r in reports:
        for kind, n in r.found.items():
            found[kind] = found.get(kind, 0) + n
    context.log.info(f"lint: {found or 'nothing new'} over {len(names)} namespace(s)")
    return dg.MaterializeResult(metadata={
        "namespaces": len(names), "facts": sum(r.facts for r in reports),
        "new_findings": dg.MetadataValue.json(found),
        "obsolete_closed": sum(r.obsolete for r in reports),
        "judge_calls": sum(r.judge_calls for r in reports),
        "per_namespace": dg.MetadataValue.json([r.as_dict() for r in reports]),
        **(recorder.as_metadata() if recorder else {}),
    })


RECALL_ASSETS = [vault_wiki, vault_lint]
