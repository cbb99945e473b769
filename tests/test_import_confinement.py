"""Imports read only what is inside the imported folder (issue 20, defect 4): a symlink out
of it (a file, a folder, a zip) is reported as an import error and never read, for every
source kind and the inbox; a FIFO or a device blocks nothing; the folder sensor's scan keeps
the same rule."""

import io
import zipfile
from pathlib import Path

import dagster as dg
import pytest

from helpers.hostile import CODEX_FILE, FORMATS, dumps
from helpers.hostile_tree import deadline, fifo, zero_device
from memory_platform.defs.ingest.automation import source_folders_sensor
from memory_platform.ingest.importer import import_path
from memory_platform.resources import DatabaseResource
from memory_platform.store import catalog as catalog_store

CANARY = "CANARYOUTSIDETHEFOLDER"
INSIDE = "INSIDETHEFOLDER"
# (kind, name of the good file, name the symlink gets, zip member name or None)
CASES = {
    "claude-code": ("session.jsonl", "passwd.jsonl", None),
    "codex": (CODEX_FILE, CODEX_FILE.replace("0123456789ab", "0123456789cd"), None),
    "chatgpt": ("conversations.json", "conversations-001.json", "conversations.json"),
    "claude-ai": ("conversations.json", None, "conversations.json"),
    "gemini": ("MyActivity.json", "Other.json", "Takeout/My Activity/Gemini Apps/x.json"),
    "notes": ("note.md", "passwd.md", None),
}


def _export(kind: str, marker: str) -> bytes:
    if kind == "notes":
        return f"# A note\n\n{marker} lives here.\n".encode()
    fmt = FORMATS[kind]
    return fmt.join([dumps(fmt.build(marker))])


def _zip(member: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(member, data)
    return out.getvalue()


def _hostile_folder(tmp_path: Path, kind: str) -> Path:
    """A folder holding one good export, and symlinks out of it to exports that would
    import: a file, a folder, a zip."""
    good, link_name, member = CASES[kind]
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    folder.mkdir()
    (outside / "sub").mkdir(parents=True)
    (folder / good).write_bytes(_export(kind, INSIDE))
    secret = _export(kind, CANARY)
    (outside / "sub" / good).write_bytes(secret)
    if link_name:
        (outside / link_name).write_bytes(secret)
        (folder / link_name).symlink_to(outside / link_name)
    (folder / "linked").symlink_to(outside / "sub")
    if member:
        (outside / "export.zip").write_bytes(_zip(member, secret))
        (folder / "export.zip").symlink_to(outside / "export.zip")
    return folder


def _texts(db) -> str:
    with db.connect() as conn:
        return "\n".join(r[0] for r in conn.execute("SELECT text FROM events").fetchall())


@pytest.mark.parametrize("kind", [*CASES, None])
def test_a_symlink_out_of_the_imported_folder_is_reported_and_never_read(db, tmp_path, kind):
    folder = _hostile_folder(tmp_path, kind or "claude-code")
    with deadline(120):
        report = import_path(db, kind, folder)
    texts = _texts(db)
    assert INSIDE in texts and CANARY not in texts
    errors = [str(e) for e in report.errors]
    assert any("linked" in e and "symlink out of the folder" in e for e in errors), errors
    link_name = CASES[kind or "claude-code"][1]
    if link_name:
        assert any(link_name in e and "symlink out" in e for e in errors), errors
    with db.connect() as conn:
        paths = [f.path for f in catalog_store.list_source_files(conn)]
    assert paths and not any("outside" in p for p in paths)


def test_an_in_folder_symlink_is_read_once_by_its_real_path(db, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "real.md").write_text(f"# Real\n\n{INSIDE}\n")
    (folder / "alias.md").symlink_to(folder / "real.md")
    report = import_path(db, "notes", folder)
    assert report.errors == [] and report.events_new == 1
    with db.connect() as conn:
        [path] = [f.path for f in catalog_store.list_source_files(conn)]
    assert path == str((folder / "real.md").resolve())


@pytest.mark.parametrize("kind", ["claude-code", "notes", None])
def test_a_fifo_or_a_device_in_an_import_folder_blocks_nothing(db, tmp_path, kind):
    folder = tmp_path / "folder"
    folder.mkdir()
    good, name, _ = CASES[kind or "claude-code"]
    (folder / good).write_bytes(_export(kind or "claude-code", INSIDE))
    fifo(folder / f"fifo{Path(good).suffix}")
    zero_device(folder / f"zero{Path(good).suffix}")
    with deadline(120):
        report = import_path(db, kind, folder)
    assert INSIDE in _texts(db)
    errors = " ".join(str(e) for e in report.errors)
    assert "FIFO" in errors and ("device" in errors or "symlink out" in errors), errors


def test_a_fifo_named_on_the_command_line_is_refused(db, tmp_path):
    with deadline(60):
        report = import_path(db, "notes", fifo(tmp_path / "named.md"))
    assert report.events_new == 0 and "FIFO" in " ".join(str(e) for e in report.errors)


def test_the_folder_sensor_does_not_scan_a_symlink_out(db, home, tmp_path):
    projects = tmp_path / "claude-projects"
    (projects / "proj").mkdir(parents=True)
    (projects / "proj" / "session.jsonl").write_bytes(_export("claude-code", INSIDE))
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(_export("claude-code", CANARY))
    (projects / "passwd.jsonl").symlink_to(outside)
    (projects / "proj" / "subagents").mkdir()
    (projects / "proj" / "subagents" / "agent-x.jsonl").symlink_to(outside)
    fifo(projects / "proj" / "blocked.jsonl")

    context = dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(),
                                      resources={"database": DatabaseResource()})
    with deadline(120):
        result = source_folders_sensor(context)
    assert len(result.run_requests) == 1
    with db.connect() as conn:
        paths = [f.path for f in catalog_store.list_source_files(conn)]
    assert paths == [str((projects / "proj" / "session.jsonl").resolve())]
