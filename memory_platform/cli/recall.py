"""`memory-platform wiki ...`, `lint ...` and `recall ...`: the vault's markdown wiki, its
lint findings, and the resident process behind the Claude Code hooks."""

from typing import Annotated

import typer

from memory_platform.cli.common import actor, database, one_line, run, say, to_json

wiki_app = typer.Typer(no_args_is_help=True, help="The vault as markdown files you can edit.")
lint_app = typer.Typer(no_args_is_help=True,
                       help="Contradictions, stale claims, orphans and near-duplicates.")
recall_app = typer.Typer(no_args_is_help=True,
                         help="The resident process behind the hooks; topics of old memories.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _namespaces(db, namespace: str | None) -> list[str]:
    from memory_platform.vault.service import primary_namespaces

    names = [n["name"] for n in primary_namespaces(db)]
    if namespace is None:
        return names
    if namespace not in names:
        raise ValueError(f"no primary namespace {namespace!r}; known: "
                         f"{', '.join(names) or 'none yet'}")
    return [namespace]


@wiki_app.command("build")
def wiki_build(namespace: Annotated[str | None, typer.Argument(
        help="One primary namespace (default: all).")] = None, json: JsonOpt = False) -> None:
    """Take your edits to the wiki files into the vault, then rewrite the wiki under
    $MEMORY_PLATFORM_HOME/wiki/<namespace>/ (a file with an edit that could not be taken in
    is kept as it is and reported: see `memory-platform lint list`)."""

    def body():
        from memory_platform.recall import classify, intake

        db = database()
        classify.backfill(db)
        results = [intake.sync(db, ns) for ns in _namespaces(db, namespace)]
        if json:
            say(to_json(results))
            return
        for r in results:
            i, b = r["intake"], r["build"]
            say(f"{i['namespace']}: {b['written']} file(s) written, {b['unchanged']} unchanged"
                f"; taken in: {len(i['edited'])} edited, {len(i['archived'])} archived, "
                f"{len(i['added'])} added"
                + (f"; {len(i['findings'])} edit(s) reported, kept: {', '.join(b['held'])}"
                   if b["held"] else ""))

    run(body)


@lint_app.command("run")
def lint_run(namespace: Annotated[str | None, typer.Argument(
        help="One primary namespace (default: all).")] = None, json: JsonOpt = False) -> None:
    """Lint the current facts (no LLM: significant-token contradictions only); findings
    wait for review, nothing in the vault changes."""

    def body():
        from memory_platform.recall import lint

        db = database()
        reports = lint.lint(db, _namespaces(db, namespace))
        if json:
            say(to_json([r.as_dict() for r in reports]))
            return
        for r in reports:
            say(f"{r.namespace}: {r.facts} facts, new findings {r.found or 'none'}, "
                f"{r.already_known} already known, {r.obsolete} closed as obsolete")

    run(body)


@lint_app.command("list")
def lint_list(namespace: Annotated[str | None, typer.Option(help="Only this one.")] = None,
              status: Annotated[str, typer.Option(help="open, kept, superseded, archived, "
                                                       "obsolete or all")] = "open",
              json: JsonOpt = False) -> None:
    """Findings waiting for review (all of them), with their evidence."""

    def body():
        from memory_platform.recall import findings
        from memory_platform.vault.tokens import Scope

        rows = findings.list_findings(database(), Scope.everything(), namespace=namespace,
                                      status=None if status == "all" else status)
        if json:
            say(to_json({"findings": rows, "total": len(rows)}))
            return
        for f in rows:
            ev = f["evidence"]
            what = "; ".join(f"#{m['id']} {one_line(m['text'], 80)}"
                             for m in ev.get("memories", [])) or \
                f"{ev.get('file')}:{ev.get('line')} {one_line(ev.get('text') or '', 80)}"
            say(f"[{f['id']}] {f['namespace']} {f['kind']} ({f['status']}): {ev['reason']} — "
                f"{what}")
        say(f"{len(rows)} finding(s)")

    run(body)


@lint_app.command("resolve")
def lint_resolve(
    finding_id: int,
    action: Annotated[str, typer.Argument(help="supersede, archive or keep")],
    old: Annotated[int | None, typer.Option(help="supersede: the memory that stops "
                                                 "holding")] = None,
    memory: Annotated[int | None, typer.Option(help="archive: which memory")] = None,
) -> None:
    """Resolve a finding: supersede one fact by the other, archive a memory, or keep both
    (the finding is not raised again while the texts stay the same). Audited."""

    def body():
        from memory_platform.recall import findings

        done = findings.resolve(database(), finding_id, action, actor=actor(), old_id=old,
                                memory_id=memory)
        say(f"finding {finding_id}: {done['status']}"
            + (f"; changed memory {', '.join(map(str, done['changed']))}"
               if done["changed"] else ""))

    run(body)


@recall_app.command("serve")
def recall_serve() -> None:
    """Run the resident process the hooks talk to, in the foreground (the hooks start it
    themselves when MEMORY_PLATFORM_RECALL_SERVER=auto)."""

    def body():
        from memory_platform.recall import server

        figures = server.serve(ready=lambda: say("listening; Ctrl-C stops"))
        say(f"served {figures['served']} hook call(s)")

    run(body)


@recall_app.command("stop")
def recall_stop() -> None:
    """Stop the resident process (after an upgrade, or to change its settings)."""

    def body():
        from memory_platform.recall import server

        say("stopped" if server.stop() else "no resident process was running")

    run(body)


@recall_app.command("classify")
def recall_classify(llm: Annotated[bool, typer.Option(
        "--llm", help="Also ask the configured LLM about unsorted memories.")] = False,
        json: JsonOpt = False) -> None:
    """Give memories written before topics existed a topic (rules), and with --llm move
    unsorted episodes the LLM is sure about. Audited as action 'classify'."""

    def body():
        from memory_platform.recall import classify

        db = database()
        result: dict = {"backfill": classify.backfill(db, actor=f"{actor()} (backfill)")}
        if llm:
            from memory_platform.llm import CallRecorder, provider_from_env

            recorder = CallRecorder(provider_from_env(), db=db)
            result["llm"] = [classify.refine_unsorted(db, recorder, ns, actor=actor())
                             for ns in _namespaces(db, None)]
        say(to_json(result) if json else str(result))

    run(body)
