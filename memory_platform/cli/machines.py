"""`memory-platform machine ...`: the machines events come from (issue 24).

    memory-platform machine list [--json]
    memory-platform machine name NEW [--of OLD]   (this machine, or the one called OLD)

This machine's stable id and name live in HOME/machine.json (made at the first run); the
others are made by `memory-platform token create --kind collector --machine NAME`. A rename
is shown in every answer at once (events name their machine by id)."""

from typing import Annotated, Optional

import typer

from memory_platform.cli.common import database, out, run, to_json
from memory_platform.settings import load_settings

machine_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                          help="The machines events come from.")


@machine_app.command("list")
def machine_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Every machine: its events and last collection."""
    def body():
        from memory_platform.ingest import machines

        rows = machines.overview(database(), load_settings().home)
        if as_json:
            print(to_json(rows))
            return
        for row in rows:
            when = str(row["last_collection_at"])[:19] if row["last_collection_at"] else "-"
            out.print(f"#{row['id']} {row['name']}{' (this one)' if row['local'] else ''}  "
                      f"events {row['events']:,}  last collection {when}", highlight=False,
                      markup=False)

    run(body)


@machine_app.command("name")
def machine_name(
    new: Annotated[str, typer.Argument(metavar="NEW", help="The new name.")],
    of: Annotated[Optional[str], typer.Option(
        "--of", help="Rename this machine instead of the local one.")] = None,
) -> None:
    """Rename this machine (or another with --of)."""
    def body():
        from memory_platform.ingest import machines

        renamed = machines.rename(database(), load_settings().home, new, of=of)
        out.print(f"machine #{renamed.id} is now {renamed.name}", highlight=False,
                  markup=False)

    run(body)
