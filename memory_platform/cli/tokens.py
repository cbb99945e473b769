"""`memory-platform token ...`: API tokens scoped to vault namespaces.

    memory-platform token create --kind agent|person --namespaces work,personal [--name laptop] [--json]
    memory-platform token create --kind collector --machine laptop   (memory-platform collect)
    memory-platform token list [--json]
    memory-platform token revoke ID

`create` prints the secret once (only its sha256 is stored); clients send it as
`Authorization: Bearer <secret>`. A token for `work` reaches `work`, `work__dream` and
`work__ideas` over REST, and gets 403 on any other namespace. Its kind is asked every time:
an `agent` token's writes are staged in `<ns>__ideas` for review (like MCP `vault_add`) and
it decides no review; a `person` token writes where it says and may review.
"""

from typing import Annotated, Optional

import typer

from memory_platform.cli.common import database, err, out, run, to_json

token_app = typer.Typer(rich_markup_mode=None, 
    no_args_is_help=True,
    help="API tokens scoped to vault namespaces (stored hashed).",
)


def _when(value) -> str:
    return str(value)[:19] if value else "-"


@token_app.command("create")
def token_create(
    kind: Annotated[str, typer.Option(
        help="agent: an AI agent or automation (its writes wait in <ns>__ideas for review); "
             "person: your own client or script (writes go where it says, may review); "
             "collector: one machine's `memory-platform collect` (--machine).")],
    namespaces: Annotated[Optional[str], typer.Option(
        help="Comma-separated primary namespaces, e.g. work,personal (their __dream and "
             "__ideas shadows come with them); not for a collector.")] = None,
    machine: Annotated[Optional[str], typer.Option(
        help="A collector token's machine: it may only append that machine's raw "
             "records.")] = None,
    name: Annotated[Optional[str], typer.Option(
        help="A unique name; the audit trail records writes as api:<name>. "
             "Default: token-<id>.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create a token and print its secret, once."""
    def body():
        from memory_platform.vault import tokens

        row, secret = tokens.create(database(), namespaces, name=name, kind=kind,
                                    machine=machine)
        if as_json:
            print(to_json({**row, "token": secret}))
            return
        where = (f"machine {row['machine']}" if row["machine"]
                 else ", ".join(row["namespaces"]))
        out.print(f"created {row['kind']} token #{row['id']} {row['name']} for {where}",
                  highlight=False, markup=False)
        print(secret)
        err.print("This is the only time the token is shown: store it now. Clients send "
                  "it as 'Authorization: Bearer <token>'.", highlight=False, markup=False)

    run(body)


@token_app.command("list")
def token_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Every token, revoked ones too (never a secret or a hash)."""
    def body():
        from memory_platform.vault import tokens

        rows = tokens.list_tokens(database())
        if as_json:
            print(to_json(rows))
            return
        for row in rows:
            state = f"revoked {_when(row['revoked_at'])}" if row["revoked_at"] else "live"
            where = (f"machine: {row['machine']}" if row["machine"]
                     else f"namespaces: {', '.join(row['namespaces'])}")
            out.print(f"#{row['id']} {row['name']} ({row['kind']})  {where}"
                      f"  created {_when(row['created_at'])}  last used "
                      f"{_when(row['last_used_at'])}  {state}", highlight=False, markup=False)
        live = sum(1 for r in rows if not r["revoked_at"])
        noun = "token" if len(rows) == 1 else "tokens"
        out.print(f"total: {len(rows)} {noun} ({live} live)", highlight=False)

    run(body)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[int, typer.Argument(metavar="ID", help="The id from `token list`.")],
) -> None:
    """Revoke a token: it stops working at once (the row stays for the audit trail)."""
    def body():
        from memory_platform.vault import tokens

        row = tokens.revoke(database(), token_id)
        out.print(f"revoked token #{row['id']} {row['name']} at {_when(row['revoked_at'])}",
                  highlight=False, markup=False)

    run(body)
