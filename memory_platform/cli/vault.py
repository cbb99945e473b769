"""`memory-platform vault ...`: durable memories from the command line.

    memory-platform vault add NAMESPACE TEXT [--category C] [--json]
    memory-platform vault list NAMESPACE [--status active|archived|all] [--json]
    memory-platform vault search QUERY [--namespace N] [--k 10] [--history] [--json]
    memory-platform vault archive ID / vault restore ID

`list` prints every memory and the total (never a capped page); with --json one object
{"namespace", "total", "memories": [...]}.

The shared helpers (`_run`, `_database`, consoles) live in cli/main.py, which registers this
app; they are imported inside the commands because main.py imports this module.
"""

import getpass
import json
from typing import Annotated, Optional

import typer
from rich.markup import escape

vault_app = typer.Typer(
    no_args_is_help=True,
    help="Durable memories, one namespace per project or persona.",
)

STATUSES = ("active", "archived", "all")


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        # getuser() fails in containers with no passwd entry and no USER; the audit row
        # still says the write came from the CLI.
        return "cli"


def _one_line(text: str, width: int = 300) -> str:
    text = " ".join(str(text).split())
    return text[:width] + ("…" if len(text) > width else "")


@vault_app.command("add")
def vault_add(
    namespace: Annotated[str, typer.Argument(help="e.g. personal, or a project's slug.")],
    text: Annotated[str, typer.Argument(help="The memory, one self-contained statement.")],
    category: Annotated[str, typer.Option(
        help="user, feedback, project or reference.")] = "user",
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored memory.")] = False,
) -> None:
    """Add a memory to a namespace (created on first write); the same text is added once."""
    from memory_platform.cli.main import _database, _run, out

    def body():
        from memory_platform import vault

        row = vault.add(_database(), namespace, text, category, _actor())
        if as_json:
            print(json.dumps(row, default=str))
            return
        verb = "added" if row["created"] else "already there:"
        out.print(f"{verb} #{row['id']} in {row['namespace']} [{row['category']}]",
                  highlight=False, markup=False)

    _run(body)


@vault_app.command("list")
def vault_list(
    namespace: Annotated[str, typer.Argument(help="The namespace to list.")],
    status: Annotated[str, typer.Option(help="active, archived or all.")] = "active",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Every memory of a namespace, oldest first, and the total."""
    from memory_platform.cli.main import _database, _run, out

    def body():
        from memory_platform import vault

        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
        rows, total = vault.list_all(_database(), namespace,
                                     status=None if status == "all" else status)
        if as_json:
            print(json.dumps({"namespace": namespace, "total": total, "memories": rows},
                             default=str))
            return
        for row in rows:
            review = f" ({row['review']})" if row["review"] else ""
            # markup=False: a memory's text may hold brackets ("[tool.ruff]") that rich
            # would read as style tags, and a stray "[/x]" would crash the listing.
            out.print(f"#{row['id']} [{row['category']}] {str(row['created_at'])[:10]}"
                      f"{review} {_one_line(row['text'])}", highlight=False, soft_wrap=True,
                      markup=False)
        noun = "memory" if total == 1 else "memories"
        out.print(f"total: {total} {noun} in {namespace} (status: {status})", highlight=False)

    _run(body)


@vault_app.command("search")
def vault_search(
    query: Annotated[str, typer.Argument(help="Words, a question, a port, a version.")],
    namespace: Annotated[Optional[str], typer.Option(
        help="Only this namespace (default: every primary namespace).")] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=100, help="How many hits.")] = 10,
    history: Annotated[bool, typer.Option(
        "--history", help="Also facts that stopped being true (superseded).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of hits.")] =
        False,
) -> None:
    """Search memories by meaning and by exact words (current facts; --history adds the
    superseded ones, marked)."""
    from memory_platform.cli.main import _database, _run, err, out

    def body():
        from memory_platform import vault

        hits = vault.search(_database(), query, namespace=namespace, k=k,
                            include_superseded=history)
        if as_json:
            print(json.dumps(hits, default=str))
            return
        if not hits:
            err.print("no hits", highlight=False)
        for hit in hits:
            score = f"{hit['similarity']:.3f}" if hit["similarity"] is not None else "  -  "
            ended = ""
            if hit["valid_to"] is not None:
                by = f" by #{hit['superseded_by']}" if hit["superseded_by"] else ""
                ended = f" [yellow]superseded{by} on {hit['valid_to']:%Y-%m-%d}[/]"
            out.print(f"[bold]{score}[/] [cyan]{hit['namespace']}[/] #{hit['id']} "
                      f"({hit['match']}){ended}\n    {escape(_one_line(hit['text']))}",
                      highlight=False)

    _run(body)


def _set_status(memory_id: int, restore: bool, as_json: bool) -> None:
    from memory_platform.cli.main import _database, _run, out

    def body():
        from memory_platform import vault_access
        from memory_platform.tokens import Scope

        change = vault_access.restore if restore else vault_access.archive
        try:
            row = change(_database(), Scope.everything(), memory_id, actor=_actor())
        except (vault_access.NotFound, vault_access.Conflict) as exc:
            raise ValueError(str(exc)) from None
        if as_json:
            print(json.dumps(row, default=str))
            return
        state = "active" if restore else "archived"
        verb = (f"{'restored' if restore else 'archived'}" if row["changed"]
                else f"already {state}:")
        out.print(f"{verb} #{row['id']} in {row['namespace']}: {_one_line(row['text'], 120)}",
                  highlight=False, markup=False)

    _run(body)


@vault_app.command("archive")
def vault_archive(
    memory_id: Annotated[int, typer.Argument(help="The memory's id (see `vault list`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the memory.")] = False,
) -> None:
    """Archive a memory: it leaves search and context, and stays restorable (audited;
    nothing is ever deleted)."""
    _set_status(memory_id, restore=False, as_json=as_json)


@vault_app.command("restore")
def vault_restore(
    memory_id: Annotated[int, typer.Argument(help="The memory's id (see `vault list "
                                                  "--status archived`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the memory.")] = False,
) -> None:
    """Make an archived memory active again (audited)."""
    _set_status(memory_id, restore=True, as_json=as_json)
