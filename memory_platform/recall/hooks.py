"""What the Claude Code hooks add to a session, and the rule they live by: a hook never
breaks or blocks a session. On any error the answer is empty (nothing is added to the
context), the error goes to `$MEMORY_PLATFORM_HOME/logs/hooks.log`, and the command exits 0.

- `SessionStart` (startup, resume, clear, compact): the pack for the session's working
  directory: the namespace its routing rule names (plus the routing default, where the
  person's own preferences live), index first, then the facts most relevant to the
  project. Input: {"session_id", "transcript_path", "cwd", "hook_event_name":
  "SessionStart", "source", ...}.
- `UserPromptSubmit`: the few memories most relevant to the prompt, leaving out what this
  session was already given. Input: {"session_id", "cwd", "hook_event_name":
  "UserPromptSubmit", "prompt", ...}.

Output (stdout, exit 0), the form Claude Code adds to the model's context for both events:

    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "<memory-platform-context>..."}}

and nothing at all when there is nothing to add. Claude Code shows at most ~10,000
characters of a hook's context whole, so a pack is also kept under MAX_CONTEXT_CHARS.
"""

import json
import logging
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.ingest.hooks import HookInputError, parse_hook_object
from memory_platform.recall.wire import write_log
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database
from memory_platform.vault.context import context
from memory_platform.vault.routing import Routing
from memory_platform.vault.tokens import Scope

SESSION_START = "SessionStart"
PROMPT = "UserPromptSubmit"
EVENTS = (SESSION_START, PROMPT)
MAX_CONTEXT_CHARS = 9_000
PROMPT_MAX_MEMORIES = 5
PROMPT_CHARS = 2_000  # of a prompt, read for relevance
# Injected without being asked, so stricter than vault_context's 0.15: a prompt about
# something else should add nothing.
PROMPT_MIN_SIMILARITY = 0.40
SEEN_TTL_SECONDS = 2 * 86400
# The hooks' database gives up on its own well inside a hook's budget (hook_client.py):
# a connection attempt after 2 s (libpq's least), a statement after 1.5 s (a pack's
# statements take milliseconds at 10k memories; BENCHMARKS.md).
HOOK_CONNECT_SECONDS = 2
HOOK_ANSWER_SECONDS = 1.5

log = logging.getLogger(__name__)


def parse_input(raw: str | bytes, event: str) -> dict:
    """Validate a SessionStart or UserPromptSubmit payload; return session_id, cwd, prompt,
    source (missing optional fields are None)."""
    data = parse_hook_object(raw, event)
    for key in ("session_id", "cwd", "prompt", "source"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HookInputError(f"{key} must be a string, got {type(data[key]).__name__}")
    if not data.get("cwd"):
        raise HookInputError("hook input has no cwd: the namespace comes from it")
    if event == PROMPT and data.get("prompt") is None:
        raise HookInputError("UserPromptSubmit input has no prompt")
    return {"session_id": data.get("session_id") or None, "cwd": data["cwd"],
            "prompt": data.get("prompt"), "source": data.get("source")}


def hook_output(event: str, text: str) -> str:
    """The stdout Claude Code adds to the context ('' when there is nothing to add)."""
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                              "additionalContext": text}})


def session_namespaces(cwd: str, routing: Routing | None = None) -> list[str]:
    """The namespace the working directory routes to, then the routing default (the
    person's own preferences follow them into every project)."""
    routing = routing or Routing.load()
    routed = routing.route(project=cwd, source="claude-code")
    return list(dict.fromkeys([routed, routing.default]))


# --- what a session was already given ------------------------------------------------------


def _seen_path(home: Path, session_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:100]
    return home / "run" / "sessions" / f"{safe}.json"


def seen_ids(home: Path, session_id: str | None) -> set[int]:
    if not session_id:
        return set()
    path = _seen_path(home, session_id)
    try:
        return set(json.loads(path.read_text()))
    except FileNotFoundError:
        return set()


def remember(home: Path, session_id: str | None, ids: list[int], *, fresh: bool) -> None:
    """Record the memories given to a session (a SessionStart starts the list afresh: a
    cleared or compacted session no longer holds what it was given)."""
    if not session_id:
        return
    path = _seen_path(home, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    known = set() if fresh else seen_ids(home, session_id)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(sorted(known | set(ids))))
    tmp.replace(path)
    if fresh:  # now and then, forget sessions idle for days
        cutoff = time.time() - SEEN_TTL_SECONDS
        for old in path.parent.glob("*.json"):
            if old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)


# --- the two hooks -------------------------------------------------------------------------


def _fit(pack: dict) -> str:
    text = pack["context"]
    if len(text) > MAX_CONTEXT_CHARS:
        raise ValueError(f"the pack is {len(text)} characters; Claude Code shows at most "
                         f"~10,000 of a hook's context whole: lower the token budget "
                         f"(MEMORY_PLATFORM_SESSION_CONTEXT_TOKENS)")
    return text


def session_start(db: Database, payload: dict, settings: Settings, *, relevance: str,
                  embedder=None) -> dict:
    """The pack for a session's start (see the module docstring)."""
    namespaces = session_namespaces(payload["cwd"])
    pack = context(db, Scope.everything(), project=payload["cwd"], namespaces=namespaces,
                   token_budget=settings.session_context_tokens, index=True,
                   relevance=relevance, embedder=embedder, fill_missing=False)
    remember(settings.home, payload["session_id"], pack["memory_ids"], fresh=True)
    return pack


def prompt(db: Database, payload: dict, settings: Settings, *, relevance: str,
           embedder=None) -> dict:
    """The few memories most relevant to a prompt, minus what the session already has."""
    text = (payload["prompt"] or "").strip()
    empty = {"context": "", "memory_ids": []}
    # A slash command or a one-word reply ("yes", "continue") asks for nothing to recall.
    if text.startswith("/") or len(text.split()) < 3:
        return empty
    seen = seen_ids(settings.home, payload["session_id"])
    pack = context(db, Scope.everything(), query=text[:PROMPT_CHARS],
                   namespaces=session_namespaces(payload["cwd"]),
                   token_budget=settings.prompt_context_tokens, index=False,
                   relevance=relevance, min_similarity=PROMPT_MIN_SIMILARITY,
                   exclude_ids=seen, max_memories=PROMPT_MAX_MEMORIES, embedder=embedder,
                   fill_missing=False)
    remember(settings.home, payload["session_id"], pack["memory_ids"], fresh=False)
    return pack


HANDLERS: dict[str, Callable[..., dict]] = {SESSION_START: session_start, PROMPT: prompt}


def log_error(home: Path | None, event: str, exc: BaseException) -> None:
    """Append the error, with its traceback, to $MEMORY_PLATFORM_HOME/logs/hooks.log. A
    hook must not fail for its log either: a log that cannot be written goes to stderr."""
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entry = (f"{stamp} {event}: {type(exc).__name__}: {exc}\n"
             + "".join(traceback.format_exception(exc)) + "\n")
    write_log(home, entry)


def hook_database(settings: Settings) -> Database:
    """The configured database with the hooks' timeouts (HOOK_CONNECT_SECONDS,
    HOOK_ANSWER_SECONDS): a database that stops answering costs a hook an error, not its
    budget."""
    return Database.from_settings(settings, connect_timeout=HOOK_CONNECT_SECONDS,
                                  answer_timeout=HOOK_ANSWER_SECONDS)


def run_hook(event: str, raw: str | bytes, *, relevance: str, db: Database | None = None,
             settings: Settings | None = None, embedder=None) -> str:
    """The whole hook: parse, pack, format. Never raises: on any error it logs and returns
    '' (nothing added to the session). `db`/`settings` default to the configured ones."""
    home = None
    try:
        settings = settings or load_settings()
        home = settings.home
        payload = parse_input(raw, event)
        db = db or hook_database(settings)
        pack = HANDLERS[event](db, payload, settings, relevance=relevance, embedder=embedder)
        return hook_output(event, _fit(pack))
    except Exception as exc:  # a hook never breaks a session: logged, nothing added
        log_error(home, event, exc)
        return ""
