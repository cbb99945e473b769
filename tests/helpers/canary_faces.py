"""The canary sweep's other faces: the Claude Code hooks (through the CLI, stdin contract),
the CLI's read commands (every command of the typer app is either swept or named here as
not a read, so a new command fails the sweep until it is placed), the curator's repository
tools (from TOOL_SPECS), the wiki's files, and every LLM prompt of the dream, the digest,
the classifier, the curator and orchard (the scripted providers record them)."""

import json
import tempfile
import time
from datetime import date, timedelta

import typer.main
from typer.testing import CliRunner

from helpers.canary import DAY, DIARY_CWD, OUTSIDE_MARK, WORK_CWD, forbidden
from memory_platform.cli.main import app as cli
from memory_platform.llm import ScriptedProvider

# Commands that write, serve, run a job or a benchmark: not read commands. Each is named,
# so a command added to the CLI must be placed (swept in READS, or here with its reason).
NOT_READS = {
    "import", "up", "embed", "summarize", "dream", "curate", "review", "sql", "mcp", "serve",
    "vault add", "vault archive", "vault restore", "vault import mem0",
    "vault import claude-memory", "vault import markdown", "orchard add", "orchard edit",
    "orchard milestone", "orchard accept", "orchard dismiss", "token create",
    "token revoke", "curator restore", "curator purge", "lint run", "lint resolve",
    "recall serve", "recall stop", "recall classify", "bench ingest", "bench search",
    "bench dedup", "bench review", "bench curator", "bench serve", "bench analytics",
    "bench hostile", "bench recall", "bench collect", "bench first-contact", "machine name",
    # swept apart: the hooks (sweep_hooks)
    "hook session-end", "hook session-start", "hook prompt",
    # a dbt build and a warehouse (~40 s here): past the sweep's 60 s; its texts are the
    # marts' summaries, masked at the dream and summarize prompts the sweep checks
    "report",
}
READS = [
    ["status"], ["machine", "list"], ["search", "password", "--mode", "keyword"], ["search", "on-call contact"],
    ["vault", "list", "work"], ["vault", "list", "personal"],
    ["vault", "search", "on-call contact"], ["vault", "search", "password"],
    ["vault", "export", "work"], ["orchard", "list"], ["orchard", "show", "work-api"],
    ["orchard", "week"], ["orchard", "proposals"], ["token", "list"],
    ["curator", "cuts"], ["curator", "runs"], ["curator", "purges"], ["lint", "list"],
    ["wiki", "build"],
]


def _commands(group=None, prefix=()) -> set[str]:
    group = group or typer.main.get_command(cli)
    found = set()
    for name, sub in group.commands.items():
        if hasattr(sub, "commands"):
            found |= _commands(sub, (*prefix, name))
        else:
            found.add(" ".join((*prefix, name)))
    return found


def sweep_cli(sweep, monkeypatch) -> None:
    """Every read command, plain and --json where it has it. The CLI is the owner at their
    own terminal (every namespace), but no credential, no outside file, and no sensitive
    personal data: a terminal's output ends up in logs, pastes and screenshots."""
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_PROVIDER", "")
    # `vault export` writes into the working directory: never the checkout's
    monkeypatch.chdir(tempfile.mkdtemp(prefix="canary-cli-"))
    commands = _commands()
    placed = {name for name in commands for args in READS
              if args[:len(name.split())] == name.split()}
    unplaced = commands - placed - NOT_READS
    assert not unplaced, (f"CLI command(s) {sorted(unplaced)} are neither swept nor named as "
                          f"not reads: add them to helpers/canary_faces.READS or NOT_READS")
    banned = forbidden(scoped=False, sees_sensitive=False)
    runner = CliRunner()
    for args in READS:
        for extra in ([], ["--json"]):
            began = time.perf_counter()
            result = runner.invoke(cli, [*args, *extra])
            sweep.slowest.append((round(time.perf_counter() - began, 2), " ".join(args)))
            if extra and result.exit_code == 2 and "--json" in (result.output or ""):
                continue  # a command without --json
            sweep.check("cli", " ".join([*args, *extra]) + f" [exit {result.exit_code}]",
                        result.output + str(result.exception or ""), banned)
            if result.exception and not isinstance(result.exception, SystemExit):
                sweep.leaks.append(f"cli {' '.join(args)}: crashed with "
                                   f"{type(result.exception).__name__}: {result.exception}")


def sweep_hooks(sweep, home, monkeypatch) -> None:
    """The three Claude Code hooks through the CLI, with the JSON Claude Code writes on
    stdin, in a session of `work` and one of `personal`; the hook's context goes to an agent:
    no sensitive personal data, and nothing of another namespace."""
    monkeypatch.setenv("MEMORY_PLATFORM_RECALL_SERVER", "off")  # this process, no resident
    runner = CliRunner()
    for cwd, scoped in ((WORK_CWD, True), (DIARY_CWD, False)):
        banned = forbidden(scoped=scoped, sees_sensitive=False)
        session = f"canary-{cwd.rsplit('/', 1)[-1]}"
        common = {"session_id": session, "cwd": cwd, "transcript_path": str(home / "t.jsonl")}
        calls = [
            ("session-start", {**common, "hook_event_name": "SessionStart",
                               "source": "startup"}),
            ("prompt", {**common, "hook_event_name": "UserPromptSubmit",
                        "prompt": "what is the staging database password of the work api"}),
            ("prompt", {**common, "hook_event_name": "UserPromptSubmit",
                        "prompt": "who is the on-call contact, mail or phone"}),
            ("session-end", {**common, "hook_event_name": "SessionEnd", "reason": "exit"}),
        ]
        for command, payload in calls:
            result = runner.invoke(cli, ["hook", command], input=json.dumps(payload))
            sweep.check("hook", f"{command} in {cwd} [exit {result.exit_code}]",
                        result.output, banned)
    log = home / "logs" / "hooks.log"
    if log.exists():
        sweep.check("hook", "hooks.log", log.read_text(), forbidden(scoped=False,
                                                                  sees_sensitive=False))


def sweep_curator_tools(sweep, repo) -> None:
    """Every tool of the curator's loop (TOOL_SPECS), in `work`'s repository, whose
    notes.md is a symlink to the file outside: what a tool answers goes to the model."""
    from memory_platform.curator.repo_tools import TOOL_SPECS, RepoTools

    samples = {"list_files": {}, "read_file": {"path": "notes.md"},
               "grep": {"pattern": OUTSIDE_MARK}, "git_log": {},
               "git_show": {"commit": "HEAD"}}
    tools = RepoTools(repo)
    banned = forbidden(scoped=True, sees_sensitive=False)
    for spec in TOOL_SPECS:
        assert spec["name"] in samples, (f"curator tool {spec['name']}: no sample arguments "
                                         f"in helpers/canary_faces.sweep_curator_tools")
        for args in (samples[spec["name"]], {**samples[spec["name"]], "path": "notes.md"}):
            result = tools.call(spec["name"], json.dumps(args))
            sweep.check("curator tool", f"{spec['name']} {args}", result, banned)


def sweep_wiki(sweep, home) -> None:
    """Every file of every wiki folder: read by the user and by agents (no sensitive data
    by default, settings.wiki_sensitive); the outside file never, and `work`'s wiki holds
    nothing of `personal`."""
    wiki = home / "wiki"
    for path in sorted(wiki.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        scoped = path.relative_to(wiki).parts[0] != "personal"
        sweep.check("wiki", str(path.relative_to(wiki)), path.read_text(errors="replace"),
                    forbidden(scoped=scoped, sees_sensitive=False))


def _prompts(sweep, face: str, llm, banned) -> None:
    for i, call in enumerate(llm.calls):
        text = "\n".join([call.system or "", *(m["content"] for m in call.messages)])
        sweep.check("prompt", f"{face} #{i + 1}", text, banned)


def check_prompts(sweep, face: str, llm) -> None:
    """The prompts `llm` recorded, from any scope: no credential, no outside file, no
    sensitive personal data."""
    _prompts(sweep, face, llm, forbidden(scoped=False, sees_sensitive=False))


def sweep_prompts(db, c, sweep, answer) -> None:
    """The prompts of every LLM path, once each: the dream (and its digest, a text that
    leaves too), the classifier, the curator of `work`, orchard's week phrased for a `work`
    token. Run first: what they leave (a digest, a curator run) is then swept on every
    face."""
    from memory_platform.curator.config import CuratorConfig
    from memory_platform.curator.propose import propose
    from memory_platform.dream.digest import build_digest
    from memory_platform.dream.propose import DreamSettings, dream_day
    from memory_platform.orchard import week
    from memory_platform.recall import classify
    from memory_platform.vault.routing import Routing
    from memory_platform.vault.tokens import Scope

    anything = forbidden(scoped=False, sees_sensitive=False)
    work = forbidden(scoped=True, sees_sensitive=False)

    dreamer = ScriptedProvider(answer)
    routing = Routing.load(c.home / "routing.toml")
    report = dream_day(db, dreamer, DAY.date(), run_id="canary-dream", routing=routing,
                       settings=DreamSettings())
    assert report.events >= 1 and dreamer.calls, "the dream read the planted turns"
    _prompts(sweep, "dream", dreamer, anything)
    digest, _ = build_digest(db, [DAY.date()], run_id="canary-dream")
    sweep.check("digest", "dream digest", digest, anything)

    classifier = ScriptedProvider(lambda call: json.dumps(
        {"category": "project", "topic": "api", "confident": False}))
    for namespace in ("work", "personal"):
        classify.refine_unsorted(db, classifier, namespace)
    _prompts(sweep, "classifier", classifier, anything)

    curator = ScriptedProvider(answer)
    config = CuratorConfig.load()
    monday = DAY.date() - timedelta(days=DAY.date().weekday())
    proposal = propose(db, "work", monday, agent=lambda: curator, dagster_run_id="canary-curator",
            config=config, repo=config.repos["work"])
    assert curator.calls, "the curator asked about work's memories"
    c.curator_run = proposal.run_pk
    _prompts(sweep, "curator of work", curator, work)

    phraser = ScriptedProvider(answer)
    week_answer = week.week(db, Scope.of(["work"]),
                            today=date(2026, 3, 4), llm=phraser)
    assert phraser.calls, "orchard phrased work's week"
    _prompts(sweep, "orchard week of work", phraser, work)
    sweep.check("orchard", "week of work (service)", json.dumps(week_answer, default=str),
                work)
