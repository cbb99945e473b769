"""`memory-platform orchard ...`: your projects, their status, blockers and next action, and
what to work on this week.

    memory-platform orchard list [--status S] [--namespace N] [--all] [--json]
    memory-platform orchard show PROJECT [--history] [--json]
    memory-platform orchard add NAME --namespace N [--repo R] [--status S] [--priority 1-5]
                                [--next TEXT] [--blocker TEXT]... [--deadline D] [--json]
    memory-platform orchard edit PROJECT [--name] [--namespace] [--repo] [--status]
                                [--priority] [--next TEXT | --no-next] [--blocker TEXT]...
                                [--no-blockers] [--deadline D | --no-deadline] [--link PATH]...
                                [--title TITLE]... [--archive | --restore] [--json]
    memory-platform orchard milestone PROJECT WHAT [--next] [--blocker]... [--no-blockers]
                                [--status] [--json]
    memory-platform orchard week [--plain] [--json]
    memory-platform orchard proposals [--all] [--no-refresh] [--json]
    memory-platform orchard accept ID [--namespace N] [--name] [--priority] [--next] [--json]
    memory-platform orchard dismiss ID

PROJECT is a name (any case) or an id. Everything here is a person's write: any field, no
daily limit, in the project's history as `cli:<user>`. `proposals` first runs discovery
over cairn (it proposes, never creates); `accept` makes a proposal a project.
"""

from typing import Annotated, Optional

import typer

from memory_platform.cli.common import actor, database, one_line, run, say, to_json

orchard_app = typer.Typer(rich_markup_mode=None,
    no_args_is_help=True,
    help="Your projects: status, blockers, next action; what to work on this week.",
)

StatusOpt = Annotated[Optional[str], typer.Option(
    help="active, paused, blocked, done or idea.")]
PriorityOpt = Annotated[Optional[int], typer.Option(min=1, max=5, help="1 (first) to 5.")]
NextOpt = Annotated[Optional[str], typer.Option("--next", help="The next action.")]
BlockerOpt = Annotated[Optional[list[str]], typer.Option(
    "--blocker", help="What blocks it (repeat for several; replaces the list).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _run(fn) -> None:
    """`run`, with orchard's refusals (missing, out of scope, conflicting) as one line."""
    def body():
        from memory_platform.vault.service import Conflict, Forbidden, NotFound

        try:
            return fn()
        except (NotFound, Conflict, Forbidden) as exc:
            raise ValueError(str(exc)) from None

    run(body)


def _everything():
    from memory_platform.vault.tokens import Scope

    return Scope.everything()


def _line(p: dict) -> str:
    parts = [f"#{p['id']} {p['name']} [{p['namespace']}] {p['status']} p{p['priority']}"]
    if p["archived"]:
        parts.append("archived")
    parts.append(f"next: {p['next_action']}" if p["next_action"] else "no next action")
    if p["blockers"]:
        parts.append("blocked by: " + "; ".join(p["blockers"]))
    if p["deadline"]:
        parts.append(f"due {p['deadline']}")
    if p["last_milestone"]:
        parts.append(f"last milestone {p['last_milestone_at']:%Y-%m-%d}: {p['last_milestone']}")
    a = p.get("activity")
    if a:
        parts.append(f"{a['turns']} turns in {a['sessions']} sessions, last active "
                     f"{a['last_active'] or 'never'}")
    return one_line(" · ".join(parts), 400)


@orchard_app.command("list")
def orchard_list(
    status: StatusOpt = None,
    namespace: Annotated[Optional[str], typer.Option(help="Only this namespace.")] = None,
    include_archived: Annotated[bool, typer.Option("--all", help="Archived ones too.")] =
        False,
    as_json: JsonOpt = False,
) -> None:
    """Every project with status, next action, blockers, last milestone and activity."""
    def body():
        from memory_platform.orchard import projects

        found = projects.list_projects(database(), _everything(), status=status,
                                       namespace=namespace, include_archived=include_archived)
        if as_json:
            print(to_json({"total": len(found), "projects": found}))
            return
        for p in found:
            say(_line(p))
        say(f"total: {len(found)} project{'' if len(found) == 1 else 's'}")

    _run(body)


@orchard_app.command("show")
def orchard_show(
    project: Annotated[str, typer.Argument(help="Name or id.")],
    history: Annotated[bool, typer.Option("--history", help="Every change too.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """One project, with its activity (and its history)."""
    def body():
        from memory_platform.orchard import projects

        found = projects.get(database(), _everything(), project, with_history=history)
        if as_json:
            print(to_json(found))
            return
        say(_line(found))
        say(f"repo: {found['repo'] or '-'} · linked: "
            f"{', '.join(found['cairn_projects'] + found['cairn_titles']) or 'nothing'}")
        for change in found.get("history", []):
            what = f": {change['milestone']}" if change["milestone"] else ""
            say(f"  {change['at']:%Y-%m-%d %H:%M} {change['change']} by {change['actor']}{what}")

    _run(body)


def _print(row: dict, verb: str, as_json: bool) -> None:
    if as_json:
        print(to_json(row))
        return
    say(f"{verb}: {_line(row)}" if row.get("changed", True) else f"unchanged: {_line(row)}")


@orchard_app.command("add")
def orchard_add(
    name: Annotated[str, typer.Argument(help="The project's name (unique).")],
    namespace: Annotated[str, typer.Option(help="Its vault namespace, e.g. work.")],
    repo: Annotated[Optional[str], typer.Option(
        help="A local path (links the Claude Code sessions run there) or a URL.")] = None,
    status: StatusOpt = None,
    priority: PriorityOpt = None,
    next_action: NextOpt = None,
    blockers: BlockerOpt = None,
    deadline: Annotated[Optional[str], typer.Option(help="e.g. 2026-04-30.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a project."""
    def body():
        from memory_platform.orchard import projects

        fields = {k: v for k, v in {"repo": repo, "status": status, "priority": priority,
                                    "next_action": next_action, "blockers": blockers,
                                    "deadline": deadline}.items() if v is not None}
        row = projects.add(database(), _everything(), name=name, namespace=namespace,
                           actor=actor(), **fields)
        _print(row, "added", as_json)

    _run(body)


@orchard_app.command("edit")
def orchard_edit(
    project: Annotated[str, typer.Argument(help="Name or id.")],
    name: Annotated[Optional[str], typer.Option(help="A new name.")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="Move to this namespace.")] = None,
    repo: Annotated[Optional[str], typer.Option(help="Path or URL.")] = None,
    status: StatusOpt = None,
    priority: PriorityOpt = None,
    next_action: NextOpt = None,
    no_next: Annotated[bool, typer.Option("--no-next", help="Clear the next action.")] =
        False,
    blockers: BlockerOpt = None,
    no_blockers: Annotated[bool, typer.Option("--no-blockers", help="Clear them.")] = False,
    deadline: Annotated[Optional[str], typer.Option(help="e.g. 2026-04-30.")] = None,
    no_deadline: Annotated[bool, typer.Option("--no-deadline", help="Clear it.")] = False,
    links: Annotated[Optional[list[str]], typer.Option(
        "--link", help="A path or chat-app project whose turns are this project's "
                       "(repeat; replaces the list).")] = None,
    titles: Annotated[Optional[list[str]], typer.Option(
        "--title", help="A conversation title whose turns are this project's (repeat; "
                        "replaces the list).")] = None,
    archive: Annotated[bool, typer.Option("--archive", help="Archive it (never deleted).")] =
        False,
    restore: Annotated[bool, typer.Option("--restore", help="Un-archive it.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Change any field of a project (recorded in its history)."""
    def body():
        from memory_platform.orchard import projects

        if archive and restore:
            raise ValueError("--archive and --restore contradict each other")
        changes = {k: v for k, v in {
            "name": name, "namespace": namespace, "repo": repo, "status": status,
            "priority": priority, "next_action": next_action, "blockers": blockers,
            "deadline": deadline, "cairn_projects": links, "cairn_titles": titles,
        }.items() if v is not None}
        for flag, key, empty in ((no_next, "next_action", None), (no_blockers, "blockers", []),
                                 (no_deadline, "deadline", None)):
            if flag:
                if key in changes:
                    raise ValueError(f"--no-{key.split('_')[0]} contradicts a new value")
                changes[key] = empty
        if archive or restore:
            changes["archived"] = archive
        if not changes:
            raise ValueError("nothing to change: give at least one option (see --help)")
        row = projects.edit(database(), _everything(), project, actor=actor(), **changes)
        _print(row, "edited", as_json)

    _run(body)


@orchard_app.command("milestone")
def orchard_milestone(
    project: Annotated[str, typer.Argument(help="Name or id.")],
    what: Annotated[str, typer.Argument(help="The milestone reached.")],
    next_action: NextOpt = None,
    blockers: BlockerOpt = None,
    no_blockers: Annotated[bool, typer.Option("--no-blockers", help="Clear them.")] = False,
    status: StatusOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a milestone (and the next action, blockers, status)."""
    def body():
        from memory_platform.orchard import projects

        if no_blockers and blockers:
            raise ValueError("--no-blockers contradicts --blocker")
        row = projects.milestone(database(), _everything(), project, what, actor=actor(),
                                 next_action=next_action,
                                 blockers=[] if no_blockers else blockers, status=status)
        _print(row, "recorded", as_json)

    _run(body)


@orchard_app.command("week")
def orchard_week(
    plain: Annotated[bool, typer.Option("--plain", help="The ranking as is, without asking "
                                                        "the configured LLM to word it.")] =
        False,
    as_json: JsonOpt = False,
) -> None:
    """What to work on this week: projects ranked, with reasons and evidence."""
    def body():
        from memory_platform.orchard import week

        db = database()
        found = week.week(db, _everything(), llm=None if plain else week.configured_llm(db))
        if as_json:
            print(to_json(found))
            return
        say(found["answer"])
        if found["phrased_by"]:
            say(f"\n(worded by {found['phrased_by']}; ranking: `orchard week --plain`)")
        if found["phrasing_error"]:
            say(f"\n(the LLM's wording is not shown: {found['phrasing_error']})")

    _run(body)


@orchard_app.command("proposals")
def orchard_proposals(
    every: Annotated[bool, typer.Option("--all", help="Accepted and dismissed ones too.")] =
        False,
    refresh: Annotated[bool, typer.Option(
        "--refresh/--no-refresh", help="Run discovery over cairn first (default).")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Projects found in cairn, waiting for you to accept or dismiss them."""
    def body():
        from memory_platform.orchard import discovery

        db = database()
        if refresh:
            discovery.discover(db)
        found = discovery.list_proposals(db, _everything(), None if every else "pending")
        if as_json:
            print(to_json(found))
            return
        for p in found:
            signals = "; ".join(f"{s['kind']} {s['value']}" for s in p["signals"])
            say(f"#{p['id']} {p['name']} ({p['state']}) · {p['sessions']} sessions, "
                f"{p['turns']} turns, last active {p['last_active'] or 'never'} · {signals}")
        say(f"total: {len(found)} proposal{'' if len(found) == 1 else 's'}"
            + ("; accept with `memory-platform orchard accept ID`" if found and not every
               else ""))

    _run(body)


@orchard_app.command("accept")
def orchard_accept(
    proposal_id: Annotated[int, typer.Argument(help="The proposal's id.")],
    namespace: Annotated[Optional[str], typer.Option(
        help="Its namespace (default: the routing rules' for its path).")] = None,
    name: Annotated[Optional[str], typer.Option(help="Another name.")] = None,
    status: StatusOpt = None,
    priority: PriorityOpt = None,
    next_action: NextOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Make a proposal a project."""
    def body():
        from memory_platform.orchard import discovery

        fields = {k: v for k, v in {"status": status, "priority": priority,
                                    "next_action": next_action}.items() if v is not None}
        done = discovery.accept(database(), _everything(), proposal_id, actor=actor(),
                                namespace=namespace, name=name, **fields)
        _print(done["project"] if not as_json else done, "accepted", as_json)

    _run(body)


@orchard_app.command("dismiss")
def orchard_dismiss(
    proposal_id: Annotated[int, typer.Argument(help="The proposal's id.")],
) -> None:
    """Not a project: discovery will not propose it again."""
    def body():
        from memory_platform.orchard import discovery

        done = discovery.dismiss(database(), _everything(), proposal_id, actor=actor())
        say(f"dismissed #{done['id']} {done['name']}")

    _run(body)
