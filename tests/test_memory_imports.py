"""Other memory stores in (issue 24, point 7): a mem0 export and history table, Claude Code's
memory files and a basic-memory/Obsidian folder are staged in `<ns>__ideas` for review,
with their provenance, deduplicated against the vault, each bad record reported with its
file and line, re-runs staging nothing twice, and file reads confined to what was named.

The samples in tests/samples/memory_stores are small copies of what the tools write:
mem0's `get_all` answer and its `history` table (mem0/memory/storage.py's schema), a
`~/.claude` with CLAUDE.md, rules and one project's auto memory, a project with CLAUDE.md,
CLAUDE.local.md and .claude/rules, and a notes folder with a basic-memory note."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory_platform.store import memories as memory_store
from memory_platform.vault import service as vault
from memory_platform.vault.imports import files, markdown, mem0
from memory_platform.vault.imports.records import Note, Problem, Record
from memory_platform.vault.imports.service import stage
from memory_platform.vault.tokens import Scope

SAMPLES = Path(__file__).parent / "samples" / "memory_stores"
CLI = str(Path(sys.executable).parent / "memory-platform")


def pending(db, namespace: str) -> list[dict]:
    with db.connect() as conn:
        return memory_store.list_memories(conn, namespace, review="pending")


def count(db, namespace: str) -> int:
    with db.connect() as conn:
        return memory_store.count_memories(conn, namespace)


def history_db(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with sqlite3.connect(path) as conn:
        conn.executescript((SAMPLES / "mem0" / "history.sql").read_text())
    return path


# --- mem0 --------------------------------------------------------------------------------


def test_a_mem0_export_is_staged_for_review_with_its_provenance(db, home):
    export = SAMPLES / "mem0" / "get_all.json"
    first = stage(db, mem0.read(export), "work", actor="test", tool="mem0")
    assert (first.read, len(first.staged), first.known, first.problems) == (3, 3, 0, [])
    assert first.namespace == "work__ideas"
    staged = {m["text"]: m for m in pending(db, "work__ideas")}
    assert set(staged) == {"Is a vegetarian and allergic to peanuts",
                           "Prefers morning meetings and async communication",
                           "Works on the orchard project, a portfolio tracker written in Rust"}
    entry = staged["Prefers morning meetings and async communication"]
    assert entry["source"] == "import" and entry["review"] == "pending"
    assert entry["why"] == (f"imported from mem0: {export.absolute()}:12, mem0 id "
                            f"7f3e1a52-9b7c-4d1e-a0f2-5c6d7e8f9a0b")
    assert count(db, "work") == 0  # never straight into the primary namespace

    again = stage(db, mem0.read(export), "work", actor="test", tool="mem0")
    assert (len(again.staged), again.known, again.duplicates) == (0, 3, 0)
    assert len(pending(db, "work__ideas")) == 3


def test_the_mem0_history_table_gives_each_memory_its_current_text(db, home, tmp_path):
    path = history_db(tmp_path)
    read = list(mem0.read(path))
    records = [r for r in read if isinstance(r, Record)]
    assert {r.text: r.where for r in records} == {
        "Moved from Lisbon to Porto in June 2025": "history row 3",  # the UPDATE, not the ADD
        "Uses Neovim with the LazyVim distribution": "history row 2"}
    assert [str(n) for n in read if isinstance(n, Note)] == [
        f"{path}: 1 memories deleted in mem0, left out"]  # the marathon, deleted
    result = stage(db, read, "personal", actor="test", tool="mem0")
    assert len(result.staged) == 2 and result.problems == []
    whys = {m["why"] for m in pending(db, "personal__ideas")}
    assert (f"imported from mem0: {path} (history row 3), mem0 id "
            f"a1f5e9c0-2b4d-4e6f-8a0b-1c2d3e4f5a6b") in whys


def test_history_rows_as_json_read_like_the_table(tmp_path):
    rows = []
    with sqlite3.connect(history_db(tmp_path)) as conn:
        conn.row_factory = sqlite3.Row
        for row in conn.execute("SELECT * FROM history ORDER BY rowid"):
            rows.append({**dict(row), "is_deleted": bool(row["is_deleted"])})
    path = tmp_path / "history.json"
    path.write_text(json.dumps(rows, indent=1))
    records = [r for r in mem0.read(path) if isinstance(r, Record)]
    assert sorted(r.text for r in records) == ["Moved from Lisbon to Porto in June 2025",
                                               "Uses Neovim with the LazyVim distribution"]
    assert all(r.where.startswith("line ") for r in records)


def test_each_bad_mem0_record_is_reported_with_its_line_and_the_rest_staged(db, home,
                                                                             tmp_path):
    lines = [
        '[',
        '  {"id": "m1", "memory": "Keeps the homelab config in a private git repo"},',
        '  "not an object",',
        '  {"id": "m3", "text": "no memory key"},',
        '  {"id": "m4", "memory": "Deploy key: ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"},',
        '  {"id": "m5", "memory": "' + "long " * 1000 + '"},',
        '  {"id": "m6", "memory": "holds a NUL \\u0000 here"},',
        '  {"id": "m7", "memory": 42},',
        '  {"id": "m8", "memory": "Runs the homelab on a Proxmox cluster of three nodes"},',
        '  {"id": "m9", "memory": "after the break" broken',
        '  {"id": "m10", "memory": "never read"}',
        ']',
    ]
    path = tmp_path / "export.json"
    path.write_text("\n".join(lines))
    result = stage(db, mem0.read(path), "work", actor="test", tool="mem0")
    assert sorted(m["text"] for m in pending(db, "work__ideas")) == [
        "Keeps the homelab config in a private git repo",
        "Runs the homelab on a Proxmox cluster of three nodes"]
    where = {int(p.split(":")[1]): p for p in (p.removeprefix(str(path)) for p in
                                                 result.problems)}
    assert sorted(where) == [3, 4, 5, 6, 7, 8, 10]
    assert "not an object (str)" in where[3]
    assert "without a \"memory\" text" in where[4] and "without a \"memory\" text" in where[8]
    assert "credential" in where[5] and "ghp_" not in where[5]  # the secret is not repeated
    assert "at most 4000 characters" in where[6]
    assert "NUL" in where[7]
    assert "invalid JSON" in where[10] and "the file ends here" in where[10]


def test_deep_nesting_costs_the_rest_of_the_file_not_the_import(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"results": [{"memory": "kept"},\n' + "[" * 200_000 + "]" * 200_000
                    + "]}")
    read = list(mem0.read(deep))
    assert [r.text for r in read if isinstance(r, Record)] == ["kept"]
    assert [(p.line, p.message) for p in read if isinstance(p, Problem)] == [
        (2, "a record nested too deeply; the file ends here")]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deep.md").write_text("---\ntitle: " + "[" * 100_000 + "]" * 100_000
                                   + "\n---\n- still read\n")
    read = list(markdown.read_folder(notes))
    assert [r.text for r in read if isinstance(r, Record)] == ["still read"]
    assert [p.message for p in read if isinstance(p, Problem)] == [
        "invalid YAML front matter; read without it"]


def test_an_odd_mem0_file_is_refused_with_its_reason(tmp_path):
    not_export = tmp_path / "other.json"
    not_export.write_text('{"memories": []}')
    [problem] = list(mem0.read(not_export))
    assert isinstance(problem, Problem) and 'no "results" list' in problem.message
    not_sqlite = tmp_path / "x.db"
    not_sqlite.write_bytes(mem0.SQLITE_MAGIC + b"\x00" * 200)
    [problem] = list(mem0.read(not_sqlite))
    assert "not a readable SQLite database" in problem.message
    other_db = tmp_path / "other.db"
    with sqlite3.connect(other_db) as conn:
        conn.execute("CREATE TABLE notes (id TEXT)")
    [problem] = list(mem0.read(other_db))
    assert "no history table" in problem.message
    binary = tmp_path / "b.json"
    binary.write_bytes(b'[{"memory": "\xff\xfe"}]')
    [problem] = list(mem0.read(binary))
    assert "not UTF-8" in problem.message


# --- Claude Code's memory files ----------------------------------------------------------


def test_claude_code_memory_files_are_staged_with_file_line_and_category(db, home):
    root = SAMPLES / "claude-home"
    read = list(markdown.read_claude(root))
    records = [r for r in read if isinstance(r, Record)]
    texts = {r.text: r for r in records}
    auto = root.absolute() / "projects/-home-dev-orchard/memory"
    pnpm = texts["Always use pnpm in the orchard repository, never npm or yarn: the lockfile "
                 "is pnpm-lock.yaml and CI fails on any other."]
    assert (pnpm.category, pnpm.file, pnpm.line) == ("feedback", str(auto / "feedback_pnpm.md"), 7)
    staging = [r for r in records if r.text.startswith("The orchard staging PostgreSQL")]
    assert [r.category for r in staging] == ["reference"]
    assert texts["Answer in British English and keep explanations short."].line == 3
    assert texts["No `from __future__ import annotations` in Dagster modules."].file == str(
        root.absolute() / "rules/style.md")
    assert any(t.endswith("```bash\nuv run pytest -q\n```") for t in texts)  # with its lead-in
    # MEMORY.md: the index entries of the topic files are not imported twice, its own
    # statement is; the @import line is not followed; transcripts are not memory files
    assert texts["The orchard CI runs on self-hosted runners labelled `orchard-ci`."].line == 5
    notes = [str(n) for n in read if isinstance(n, Note)]
    assert sum("index entry of" in n for n in notes) == 2
    assert any(n.endswith("CLAUDE.md:15: not followed: an @import line (import that file by "
                          "its own path)") for n in notes)
    assert not any(".jsonl" in r.file for r in records) and len(records) == 9

    result = stage(db, read, "work", actor="cli:dev", tool="claude-code")
    assert (len(result.staged), result.problems) == (9, [])
    staged = {m["text"]: m for m in pending(db, "work__ideas")}
    assert staged[pnpm.text]["category"] == "feedback"
    assert staged[pnpm.text]["why"] == (f"imported from claude-code: {auto}/feedback_pnpm.md:7")


def test_a_project_s_claude_files_and_its_rules(db, home):
    root = SAMPLES / "project"
    records = [r for r in markdown.read_claude(root) if isinstance(r, Record)]
    by_file = {}
    for r in records:
        by_file.setdefault(Path(r.file).relative_to(root.absolute()).as_posix(), []).append(
            r.line)
    assert by_file == {".claude/rules/testing.md": [7], "CLAUDE.local.md": [1],
                       "CLAUDE.md": [3, 7, 8]}
    nested = [r.text for r in records if r.line == 8][0]
    assert nested.startswith("Test everything") and "PUBLIC_API_URL" in nested
    assert not any("keep this file" in r.text for r in records)  # an HTML comment


def test_one_memory_file_can_be_named(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    topic = memory / "user_role.md"
    topic.write_text("---\nname: role\ndescription: the user's role\ntype: user\n---\n\n"
                     "The user is the data platform's on-call lead this quarter.\n")
    [record] = list(markdown.read_claude(topic))
    assert (record.text, record.category, record.line) == (
        "The user is the data platform's on-call lead this quarter.", "user", 7)


# --- a notes folder ----------------------------------------------------------------------


def test_a_basic_memory_and_obsidian_folder(db, home):
    root = SAMPLES / "notes"
    records = [r for r in markdown.read_folder(root) if isinstance(r, Record)]
    texts = [r.text for r in records]
    assert "Search Design: Dense weight 0.7 beat reciprocal rank fusion on LoCoMo #search" in texts
    assert "Search Design implements Retrieval Requirements" in texts
    assert ("Paired with Mira on the dashboard's review queue; we agreed the queue shows the "
            "oldest entry first.") in texts  # a wikilink becomes its text
    assert not any(".obsidian" in r.file for r in records)
    result = stage(db, records, "personal", actor="test", tool="markdown")
    assert len(result.staged) == len(records) == 8
    assert {m["source"] for m in pending(db, "personal__ideas")} == {"import"}


# --- deduplicated against the vault ------------------------------------------------------


def test_imports_are_deduplicated_against_the_vault(db, home, tmp_path):
    scope = Scope.everything()
    vault.add(db, scope, "work", "Is a vegetarian and allergic to peanuts", None, actor="t")
    vault.add(db, scope, "work", "Prefers morning meetings and async communication.", None,
              actor="t")
    export = SAMPLES / "mem0" / "get_all.json"
    result = stage(db, mem0.read(export), "work", actor="test", tool="mem0")
    # the same text in the primary namespace is known; the same fact with a full stop is
    # the gate's duplicate; only the third is new
    assert (result.known, result.duplicates, len(result.staged)) == (1, 1, 1)
    assert [m["text"] for m in pending(db, "work__ideas")] == [
        "Works on the orchard project, a portfolio tracker written in Rust"]
    # within one import too: the same statement in two files is staged once
    twice = tmp_path / "notes"
    twice.mkdir()
    for name in ("a.md", "b.md"):
        (twice / name).write_text("- The backup NAS is a Synology DS920+ in the hall cupboard\n")
    again = stage(db, markdown.read_folder(twice), "work", actor="test", tool="markdown")
    assert (len(again.staged), again.known) == (1, 1)


def test_the_namespace_must_be_one_ideas_can_belong_to(db, home):
    export = SAMPLES / "mem0" / "get_all.json"
    with pytest.raises(ValueError, match="holds the dream's output"):
        stage(db, mem0.read(export), "work__dream", actor="test", tool="mem0")
    with pytest.raises(ValueError, match="invalid namespace"):
        stage(db, mem0.read(export), "Work Stuff", actor="test", tool="mem0")
    result = stage(db, mem0.read(export), "work__ideas", actor="test", tool="mem0")
    assert result.namespace == "work__ideas" and len(result.staged) == 3
    assert count(db, "work") == 0
    with pytest.raises(ValueError, match="a suggestion's source is one of agent, import"):
        vault.add_idea(db, Scope.everything(), "work", "a dream in disguise", None,
                       actor="test", source="dream")


# --- confined reads ----------------------------------------------------------------------


def test_symlinks_fifos_nul_and_huge_files_are_refused_and_reported(tmp_path, monkeypatch):
    outside = tmp_path / "secret.md"
    outside.write_text("- the outside file must not be read\n")
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "ok.md").write_text("- a fine statement\n")
    (root / "out.md").symlink_to(outside)
    (root / "outdir").symlink_to(tmp_path, target_is_directory=True)
    (root / "in.md").symlink_to(root / "ok.md")
    os.mkfifo(root / "pipe.md")
    (root / "nul.md").write_bytes(b"- first line\n- a NUL \x00 here\n")
    (root / "latin1.md").write_bytes(b"- caf\xe9\n")
    (root / "sub" / "big.md").write_text("- big\n" * 100)
    monkeypatch.setattr(markdown, "MAX_NOTE_BYTES", 200)
    read = list(markdown.read_folder(root))  # returns: the FIFO does not block
    records = [r for r in read if isinstance(r, Record)]
    assert [(Path(r.file).name, r.text) for r in records] == [("ok.md", "a fine statement")]
    problems = {Path(p.file).name: p for p in read if isinstance(p, Problem)}
    # the confined reader's words (memory_platform.confined)
    assert "a symlink out of the folder" in problems["out.md"].message
    assert "a symlink out of the folder" in problems["outdir"].message
    assert "a FIFO: not read" in problems["pipe.md"].message
    assert (problems["nul.md"].line, problems["nul.md"].message) == (
        2, "refused: a NUL byte (not a text file)")
    assert "not UTF-8" in problems["latin1.md"].message
    assert "600 bytes, over the limit of 200" in problems["big.md"].message
    # a symlink inside the folder is read once, where its target is: ok.md, not twice
    assert not [n for n in read if isinstance(n, Note)]
    assert not any("outside file" in r.text for r in records)


def test_a_named_fifo_or_folder_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "export.json"
    os.mkfifo(fifo)
    with pytest.raises(files.Refused, match="a FIFO: not read"):
        list(mem0.read(fifo))
    with pytest.raises(files.Refused, match="a folder: not read"):
        list(mem0.read(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such file"):
        list(mem0.read(tmp_path / "missing.json"))


# --- the command -------------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=dict(os.environ),
                          timeout=300)


def test_the_import_commands(db, home, tmp_path):
    claude = tmp_path / "claude"
    shutil.copytree(SAMPLES / "claude-home", claude)
    done = run("vault", "import", "claude-memory", str(claude), "--namespace", "work")
    assert done.returncode == 0, done.stderr
    assert "9 claude-code memories read: 9 staged in work__ideas for review" in done.stdout
    assert "note: " in done.stderr and "index entry of feedback_pnpm.md" in done.stderr
    again = run("vault", "import", "claude-memory", str(claude), "-n", "work", "--json")
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert (data["staged"], data["known"], data["namespace"]) == (0, 9, "work__ideas")

    bad = tmp_path / "bad.json"
    bad.write_text('{"results": [\n {"memory": "Drinks oat milk flat whites"},\n {"id": 2}\n]}')
    failed = run("vault", "import", "mem0", str(bad), "--namespace", "personal")
    assert failed.returncode == 1
    assert f"error: {bad}:3: a record without a \"memory\" text" in failed.stderr
    assert "1 mem0 memories read: 1 staged in personal__ideas" in failed.stdout
    refused = run("vault", "import", "markdown", str(tmp_path), "-n", "work__dream")
    assert refused.returncode == 1 and "holds the dream's output" in refused.stderr
    missing = run("vault", "import", "mem0", str(tmp_path / "nope.json"), "-n", "work")
    assert missing.returncode == 1 and "error:" in missing.stderr
    assert "no such file" in missing.stderr
    assert count(db, "work") == 0 and count(db, "personal") == 0
