"""`memory-platform vault ...`: durable memories from the command line.

    memory-platform vault add NAMESPACE TEXT [--category C] [--topic T] [--json]
    memory-platform vault list NAMESPACE [--status active|archived|all] [--json]
    memory-platform vault search QUERY [--namespace N] [--k 10] [--history] [--json]
    memory-platform vault archive ID / vault restore ID
    memory-platform vault import mem0 FILE | claude-memory [PATH] | markdown DIR -n NAMESPACE

`list` prints every memory and the total (never a capped page); with --json one object
{"namespace", "total", "memories": [...]}.

Every command goes through the vault's one service (vault/service.py) with the whole scope:
the same rules as REST and MCP (no hand writes into `<ns>__dream`, no credentials, known
categories), audited as `cli:<user>`. `vault import` stages other tools' memories in
`<namespace>__ideas` for review (vault/imports), one `error: FILE:LINE: why` per record
that could not be, exit 1 when there is one.
"""

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from memory_platform.cli.common import actor, database, err, one_line, out, run, to_json

vault_app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help="Durable memories, one namespace per project or persona.",
)

@vault_app.command("add")
def vault_add(
    namespace: Annotated[str, typer.Argument(help="e.g. personal, or a project's slug.")],
    text: Annotated[str, typer.Argument(help="The memory, one self-contained statement.")],
    category: Annotated[str | None, typer.Option(
        help="user, feedback, project, reference, decision or episode (default: chosen by "
             "rules from the text).")] = None,
    topic: Annotated[str | None, typer.Option(
        help="A short slug, e.g. database (default: chosen by rules).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored memory.")] = False,
) -> None:
    """Add a memory (the same text is added once).

    Add a memory to a namespace (created on first write); the same text is added once."""
    def body():
        from memory_platform.vault import service
        from memory_platform.vault.tokens import Scope

        row = service.add(database(), Scope.everything(), namespace, text, category,
                          actor=actor(), topic=topic)
        if as_json:
            print(to_json(row))
            return
        verb = "added" if row["created"] else "already there:"
        out.print(f"{verb} #{row['id']} in {row['namespace']} [{row['category']}/"
                  f"{row['topic']}]",
                  highlight=False, markup=False)

    run(body)


@vault_app.command("list")
def vault_list(
    namespace: Annotated[str, typer.Argument(help="The namespace to list.")],
    status: Annotated[str, typer.Option(help="active, archived or all.")] = "active",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Every memory of a namespace, oldest first, and the total."""
    def body():
        from memory_platform.vault import service
        from memory_platform.vault.tokens import Scope

        try:
            rows, total = service.list_all(database(), Scope.everything(), namespace,
                                           status=status)
        except service.NotFound as exc:
            raise ValueError(str(exc)) from None
        if as_json:
            print(to_json({"namespace": namespace, "total": total, "memories": rows}))
            return
        for row in rows:
            review = f" ({row['review']})" if row["review"] else ""
            # markup=False: a memory's text may hold brackets ("[tool.ruff]") that rich
            # would read as style tags, and a stray "[/x]" would crash the listing.
            out.print(f"#{row['id']} [{row['category']}] {str(row['created_at'])[:10]}"
                      f"{review} {one_line(row['text'])}", highlight=False, soft_wrap=True,
                      markup=False)
        noun = "memory" if total == 1 else "memories"
        out.print(f"total: {total} {noun} in {namespace} (status: {status})", highlight=False)

    run(body)


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
    """Search memories by meaning and by exact words.

    Search memories by meaning and by exact words (current facts; --history adds the
    superseded ones, marked)."""
    def body():
        from memory_platform.vault import service
        from memory_platform.vault.tokens import Scope

        try:
            hits = service.search(database(), Scope.everything(), query, namespace=namespace,
                                  k=k, include_superseded=history)["hits"]
        except service.NotFound as exc:
            raise ValueError(str(exc)) from None
        if as_json:
            print(to_json(hits))
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
                      f"({hit['match']}){ended}\n    {escape(one_line(hit['text']))}",
                      highlight=False, markup=True)

    run(body)


def _set_status(memory_id: int, restore: bool, as_json: bool) -> None:
    def body():
        from memory_platform.vault import service
        from memory_platform.vault.tokens import Scope

        change = service.restore if restore else service.archive
        try:
            row = change(database(), Scope.everything(), memory_id, actor=actor())
        except (service.NotFound, service.Conflict) as exc:
            raise ValueError(str(exc)) from None
        if as_json:
            print(to_json(row))
            return
        state = "active" if restore else "archived"
        verb = (f"{'restored' if restore else 'archived'}" if row["changed"]
                else f"already {state}:")
        out.print(f"{verb} #{row['id']} in {row['namespace']}: {one_line(row['text'], 120)}",
                  highlight=False, markup=False)

    run(body)


@vault_app.command("archive")
def vault_archive(
    memory_id: Annotated[int, typer.Argument(help="The memory's id (see `vault list`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the memory.")] = False,
) -> None:
    """Archive a memory (restorable, never deleted).

    Archive a memory: it leaves search and context, and stays restorable (audited;
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


@vault_app.command("export")
def vault_export(
    namespace: Annotated[str, typer.Argument(help="The namespace to export.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write into.")] = Path("."),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Write a namespace to NAMESPACE.json and NAMESPACE.md.

    Write every memory of a namespace to <namespace>.json and <namespace>.md (current
    facts, and superseded ones marked as such)."""
    def body():
        from memory_platform.vault.export import export_namespace

        result = export_namespace(database(), namespace, out_dir)
        if as_json:
            print(to_json(result))
            return
        counts = ", ".join(f"{n} {state}" for state, n in result["counts"].items() if n)
        out.print(f"exported {result['total']} memories of {namespace} ({counts or 'none'}) "
                  f"to {result['json']} and {result['markdown']}", highlight=False,
                  markup=False)

    run(body)


import_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help=(
    "Stage memories kept by other tools (mem0, Claude Code's memory files, a markdown "
    "folder) in <namespace>__ideas for review."))
vault_app.add_typer(import_app, name="import")

NamespaceOption = Annotated[str, typer.Option(
    "--namespace", "-n", help="The primary namespace they are for; they wait in "
                              "<namespace>__ideas until reviewed.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def _printable(text: str) -> str:
    """A file name or message as the terminal shows it: control characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _stage(tool: str, namespace: str, read, as_json: bool) -> None:
    def body():
        from memory_platform.vault.imports import service

        service.target(namespace)  # a bad namespace is refused before any file is read
        result = service.stage(database(), read(), namespace, actor=actor(), tool=tool,
                               progress=None if as_json else
                               (lambda line: err.print(line, highlight=False, markup=False)))
        if as_json:
            print(to_json(result.as_dict()))
        else:
            for problem in result.problems:
                err.print(f"error: {_printable(problem)}", highlight=False, markup=False,
                          soft_wrap=True)
            for note in result.notes:
                err.print(f"note: {_printable(note)}", highlight=False, markup=False,
                          soft_wrap=True)
            out.print(f"{result.read} {tool} memories read: {len(result.staged)} staged in "
                      f"{result.namespace} for review, {result.known} already in the vault, "
                      f"{result.duplicates} duplicates of known memories"
                      + (f"; {len(result.problems)} error(s)" if result.problems else ""),
                      highlight=False, markup=False)
            if result.staged:
                out.print(f"review them: memory-platform review --namespace {result.namespace}",
                          highlight=False, markup=False)
        if result.problems:
            raise typer.Exit(1)

    run(body)


@import_app.command("mem0")
def import_mem0(
    path: Annotated[Path, typer.Argument(help="mem0's get_all export (JSON), or its history "
                                              "table: ~/.mem0/history.db or its rows as JSON.")],
    namespace: NamespaceOption,
    as_json: JsonOption = False,
) -> None:
    """Stage a mem0 store's memories for review."""
    from memory_platform.vault.imports import mem0

    _stage("mem0", namespace, lambda: mem0.read(path.expanduser()), as_json)


@import_app.command("claude-memory")
def import_claude_memory(
    namespace: NamespaceOption,
    path: Annotated[Optional[Path], typer.Argument(
        help="~/.claude (the default: CLAUDE.md, rules/, every project's auto memory), a "
             "project (CLAUDE.md, CLAUDE.local.md, .claude/), a memory folder or a "
             "file.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Stage Claude Code's memory files (CLAUDE.md, auto memory) for review."""
    from memory_platform.vault.imports import markdown

    root = (path or Path("~/.claude")).expanduser()
    _stage("claude-code", namespace, lambda: markdown.read_claude(root), as_json)


@import_app.command("markdown")
def import_markdown(
    path: Annotated[Path, typer.Argument(help="A basic-memory or Obsidian-style folder of "
                                              "markdown notes, or one note.")],
    namespace: NamespaceOption,
    as_json: JsonOption = False,
) -> None:
    """Stage a folder of markdown notes, one memory per statement, for review."""
    from memory_platform.vault.imports import markdown

    _stage("markdown", namespace, lambda: markdown.read_folder(path.expanduser()), as_json)
