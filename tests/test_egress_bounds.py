"""Bounded input on the paths issue 20's probe found unbounded: the claude-cli's output
nested past the stack, the hooks' log file replaced by a FIFO or a symlink, the vault
export's temporary file, and the transcript a hook names."""

import json

import pytest

from memory_platform.llm.base import LLMCallFailed
from memory_platform.llm.claude_cli import parse_cli_output


def test_claude_cli_output_nested_past_the_stack_is_a_clear_error():
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(LLMCallFailed, match="nests deeper than"):
        parse_cli_output(deep)
    with pytest.raises(LLMCallFailed, match="nests deeper than"):
        parse_cli_output("some log line\n" + "{\"a\":" * 50_000 + "1" + "}" * 50_000)
    # a result line after a deep line is still found; shallow output parses as before
    result = {"type": "result", "subtype": "success", "result": "ok"}
    assert parse_cli_output("[" * 5000 + "\n" + json.dumps(result)) == result
    assert parse_cli_output(json.dumps(result)) == result
    assert parse_cli_output("not json") is None


def _log_both(home, capsys) -> str:
    """Log one error through each of the hooks' two loggers (the resident path and the
    fast client), each in a thread that must end within 5 s; their stderr."""
    import threading

    from memory_platform.recall import hook_client, hooks

    for log in (lambda: hooks.log_error(home, "SessionStart", RuntimeError("boom")),
                lambda: hook_client._log(home, "UserPromptSubmit", RuntimeError("boom"))):
        t = threading.Thread(target=log, daemon=True)
        t.start()
        t.join(5)
        assert not t.is_alive(), "a hook blocked on its log file"
    return capsys.readouterr().err


def test_a_fifo_as_the_hooks_log_neither_blocks_nor_is_written(tmp_path, capsys):
    import os

    (tmp_path / "logs").mkdir()
    os.mkfifo(tmp_path / "logs" / "hooks.log")
    err = _log_both(tmp_path, capsys)
    assert err.count("hooks.log: a FIFO: not written; the entry:") == 2, err
    assert "RuntimeError: boom" in err  # the entry still goes somewhere a person can see


def test_a_symlink_as_the_hooks_log_is_not_followed(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("untouched\n")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "hooks.log").symlink_to(elsewhere)
    err = _log_both(tmp_path, capsys)
    assert elsewhere.read_text() == "untouched\n"
    assert err.count("hooks.log: a symlink: not followed; the entry:") == 2, err


def test_the_hooks_log_is_appended_when_it_is_a_plain_file(tmp_path, capsys):
    err = _log_both(tmp_path, capsys)
    assert err == ""
    assert (tmp_path / "logs" / "hooks.log").read_text().count("RuntimeError: boom") >= 2


def test_vault_export_writes_through_no_planted_symlink(db, tmp_path):
    from memory_platform.store import memories as memory_store
    from memory_platform.vault.export import export_namespace

    with db.connect() as conn:
        memory_store.add_memory(conn, namespace="acme", text="The acme API uses port 8080",
                                actor="test")
    out = tmp_path / "export"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    other = tmp_path / "other.txt"
    other.write_text("also precious\n")
    # the old predictable temporary name, and the target name itself, planted as symlinks
    (out / ".acme.json.tmp").symlink_to(victim)
    (out / "acme.md").symlink_to(other)
    summary = export_namespace(db, "acme", out)
    assert victim.read_text() == "precious\n" and other.read_text() == "also precious\n"
    assert not (out / "acme.md").is_symlink() and not (out / "acme.json").is_symlink()
    assert "port 8080" in (out / "acme.md").read_text()
    assert json.loads((out / "acme.json").read_text())["total"] == summary["total"] == 1
    assert sorted(p.name for p in out.iterdir()) == [".acme.json.tmp", "acme.json", "acme.md"]


def _transcript(path, session: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"type": "user", "sessionId": session,
                                "timestamp": "2026-11-30T10:00:00Z",
                                "message": {"role": "user", "content": "hi"}}) + "\n")


def test_a_hooks_transcript_path_is_read_only_inside_the_projects_folder(tmp_path):
    import os
    import threading

    from memory_platform.dream.triggers import hook_transcripts, transcript_days

    projects, outside = tmp_path / "projects", tmp_path / "diary"
    _transcript(projects / "p" / "good.jsonl", "good")
    _transcript(outside / "secret.jsonl", "secret")
    (projects / "p" / "link.jsonl").symlink_to(outside / "secret.jsonl")
    os.mkfifo(projects / "p" / "fifo.jsonl")

    def ask(path, session="nope"):
        refused: list[str] = []
        found = hook_transcripts({"session_id": session, "transcript_path": str(path)},
                                 projects, refused)
        return [f[0] for f in found], refused

    assert ask(projects / "p" / "good.jsonl") == ([str(projects / "p" / "good.jsonl")], [])
    for path, why in ((outside / "secret.jsonl", "outside the Claude Code projects folder"),
                      (projects / "p" / "link.jsonl", "outside the Claude Code projects folder"),
                      (projects / "p" / "fifo.jsonl", "a FIFO"),
                      (projects / "p" / ".." / ".." / "diary" / "secret.jsonl",
                       "outside the Claude Code projects folder")):
        found, refused = ask(path)
        assert found == [] and len(refused) == 1 and why in refused[0], (path, refused)
    # a session id that climbs out of the folder is no way around it
    found, refused = ask("", session="../../diary/secret")
    assert found == [], refused
    # the file swapped for a FIFO after the check: reading its days does not block
    days = []
    t = threading.Thread(target=lambda: days.append(
        transcript_days(str(projects / "p" / "fifo.jsonl"), 10, 0)), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and days == [("1970-01-01", "1970-01-01")]
