"""Every `memory-platform ...` command in a code block of README.md or docs/*.md parses
against the CLI: the command path resolves and every option and argument is accepted
(the CLI's own click parser), without running the command.

Issue 22: the README's tour had `vault archive 42 / vault restore 42` and
`lint run / lint list / lint resolve 7 keep`, which fail when pasted.
"""

import re
import shlex
from pathlib import Path

import pytest
import typer

# typer 0.29 runs its own copy of click (typer._click): the parser and errors the CLI uses.
from typer._click.core import Command
from typer._click.exceptions import UsageError
from typer.core import TyperGroup

from memory_platform.cli import app

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
INDENTED = re.compile(r"(?:^(?: {4}|\t).*\n?)+", re.M)
# A command inside a JSON or TOML block: "command": "memory-platform hook session-end".
QUOTED = re.compile(r'"((?:[\w./~-]*/)?memory-platform(?: [^"]*)?)"')
OPERATORS = {"&&", "||", "|", ";", "&", "(", ")"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def code_blocks(text: str) -> list[str]:
    fenced = FENCED.findall(text)
    rest = FENCED.sub("", text)
    # An indented block is code only after a blank line (not a list item's continuation).
    indented = [m.group(0) for m in INDENTED.finditer(rest)
                if m.start() == 0 or rest[max(0, m.start() - 2):m.start()] == "\n\n"]
    return fenced + indented


def commands_in(block: str) -> list[list[str]]:
    """Each `memory-platform` invocation in a shell block: its arguments, comments dropped,
    split at shell operators and after any `VAR=value` prefix."""
    found = []
    lines = QUOTED.findall(block) if block.lstrip().startswith(("{", "[")) else block.splitlines()
    for line in lines:
        if "memory-platform" not in line:
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token in OPERATORS:
                while segment and ASSIGNMENT.match(segment[0]):
                    segment.pop(0)
                if segment and Path(segment[0]).name == "memory-platform":
                    found.append(segment[1:])
                segment = []
            else:
                segment.append(token)
    return found


def documented() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        for block in code_blocks(page.read_text(encoding="utf-8")):
            for args in commands_in(block):
                out.append((f"{page.relative_to(REPO)}: memory-platform {shlex.join(args)}",
                            args))
    return out


def parse(args: list[str]) -> str:
    """Parses `args` as the CLI would and returns the resolved command path; raises
    UsageError (no such command or option, a missing or extra argument, a bad value)."""
    if args[:1] == ["collect"]:  # dispatched before typer to the collector's own parser
        from memory_platform.collect.cli import _parser
        try:
            _parser().parse_args(args[1:])
        except SystemExit as exit_:
            raise UsageError(f"collect: {args[1:]} does not parse") from exit_
        return "memory-platform collect"
    command: Command = typer.main.get_command(app)
    ctx = command.make_context("memory-platform", list(args))
    path = ["memory-platform"]
    while isinstance(command, TyperGroup):
        rest = [*ctx._protected_args, *ctx.args]  # what the group left to its subcommand
        if not rest:
            raise UsageError(f"{' '.join(path)} needs a command", ctx)
        name, command, rest = command.resolve_command(ctx, rest)
        path.append(name)
        ctx = command.make_context(name, rest, parent=ctx)
    return " ".join(path)


COMMANDS = documented()


def test_the_pages_have_commands():
    pages = {label.split(":")[0] for label, _ in COMMANDS}
    assert "README.md" in pages and len(pages) >= 10
    assert len(COMMANDS) >= 60


@pytest.mark.parametrize("args", [a for _, a in COMMANDS], ids=[label for label, _ in COMMANDS])
def test_documented_command_parses(args):
    parse(args)


@pytest.mark.parametrize("bad", [
    ["vault", "archive", "42", "/", "vault", "restore", "42"],  # the old tour's line
    ["lint", "run", "/", "lint", "list"],
    ["search"],                                                   # missing the query
    ["search", "x", "--no-such-option"],
    ["vault", "frobnicate"],
    ["vault"],
    ["orchard", "accept", "3", "--priority", "two"],             # not an int
])
def test_a_broken_command_does_not_parse(bad):
    # typer converts an int through pydantic: a bad value is its ValidationError (a ValueError)
    with pytest.raises((UsageError, ValueError)):
        parse(bad)


def test_commands_are_found_in_every_kind_of_block():
    text = ("text\n\n```bash\nsource .venv/bin/activate\n"
            "MEMORY_PLATFORM_HOME=~/mp memory-platform status --json  # a comment\n"
            "memory-platform embed && .venv/bin/memory-platform search 'a b'\n```\n\n"
            "    memory-platform token list\n\n"
            '```json\n{ "command": "memory-platform hook session-end", "timeout": 10 }\n```\n')
    found = [args for block in code_blocks(text) for args in commands_in(block)]
    assert found == [["status", "--json"], ["embed"], ["search", "a b"], ["hook", "session-end"],
                     ["token", "list"]]
