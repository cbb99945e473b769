"""The confined reader (memory_platform/confined.py): unit cases, then property tests over a
tree of hostile entries (symlinks in and out, loops, FIFOs, sockets, devices, names that are
not UTF-8, huge files, deep trees), each within a deadline: nothing blocks, nothing outside
the root is read or written, and every entry not listed is reported."""

import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.hostile_tree import deadline, fifo, loop, unix_socket, zero_device
from memory_platform import confined
from memory_platform.confined import REFUSE, Refused, Root, open_file, walk

CANARY = b"CANARY-OUTSIDE-THE-ROOT"


@pytest.fixture
def tree(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_bytes(CANARY)
    (outside / "dir" / "secret.md").write_bytes(CANARY)
    (root / "a.md").write_text("a")
    (root / "sub" / "b.md").write_text("b")
    return root, outside


def test_a_symlink_out_is_refused_and_one_inside_is_listed_once_by_its_real_path(tree):
    root, outside = tree
    (root / "out.md").symlink_to(outside / "secret.md")
    (root / "outdir").symlink_to(outside / "dir")
    (root / "alias.md").symlink_to(root / "sub" / "b.md")
    (root / "subalias").symlink_to("sub")  # inside: its files are listed where they are
    found = walk(root)
    assert found.files == [root / "a.md", root / "sub" / "b.md"]
    assert found.links == {root / "alias.md": root / "sub" / "b.md"}
    assert {Path(s.path).name: s.reason for s in found.skipped}.keys() == {"out.md", "outdir"}
    assert all("symlink out of the folder" in s.reason for s in found.skipped)
    refused = walk(root, links=REFUSE)
    assert refused.files == [root / "a.md", root / "sub" / "b.md"] and refused.links == {}
    assert {Path(s.path).name for s in refused.skipped} == {"out.md", "outdir", "alias.md",
                                                           "subalias"}


def test_rules_judge_a_symlink_target_where_it_really_is(tree):
    root, _ = tree
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]")
    (root / "cfg").symlink_to(root / ".git" / "config")
    (root / "gitlink").symlink_to(".git")
    found = walk(root, descend=lambda rel: rel.name != ".git")
    assert root / ".git" / "config" not in found.files
    assert {Path(s.path).name for s in found.skipped} == {"cfg", "gitlink"}
    git_free = Root(root, descend=lambda rel: rel.name != ".git")
    for path in ("gitlink/config", "cfg"):
        with pytest.raises(Refused, match="left out"):
            git_free.resolve(path)


def test_nothing_but_regular_files_is_opened_and_nothing_blocks(tree, tmp_path):
    root, _ = tree
    fifo(root / "pipe.md")
    zero_device(root / "zero.md")
    sock = unix_socket(root / "sock.md")
    loop(root / "loop.md")
    (root / "gone.md").symlink_to(root / "nowhere")
    try:
        with deadline(20):
            found = walk(root)
            for name in ("pipe.md", "sock.md"):
                with pytest.raises(Refused):
                    open_file(root / name)
            with pytest.raises(Refused):
                open_file(root / "zero.md")
    finally:
        sock.close()
    reasons = {Path(s.path).name: s.reason for s in found.skipped}
    assert "FIFO" in reasons["pipe.md"] and "socket" in reasons["sock.md"]
    assert "device" in reasons["zero.md"] or "symlink out" in reasons["zero.md"]
    assert "loop" in reasons["loop.md"] and "broken" in reasons["gone.md"]


def test_open_file_takes_only_real_paths_and_caps_sizes(tree):
    root, outside = tree
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linkdir").symlink_to(outside / "dir")
    for path in (root / "link.md", root / "linkdir" / "secret.md"):
        with pytest.raises(Refused, match="symlink"):
            open_file(path)
    (root / "big.md").write_bytes(b"x" * 1001)
    with pytest.raises(Refused, match="over the limit of 1,000"):
        confined.read_bytes(root / "big.md", 1000)
    assert confined.read_bytes(root / "a.md", 1000) == b"a"
    for bad in (f"{root}/a.md\x00.txt", b"/etc/passwd\x00"):
        with pytest.raises(Refused, match="NUL"):
            open_file(bad)
    with pytest.raises(Refused, match="NUL"):
        walk(f"{root}\x00")


def test_root_refuses_escapes_and_writes_never_go_through_a_symlink(tree):
    root, outside = tree
    (root / "topics").symlink_to(outside / "dir")
    (root / "passwd.md").symlink_to(outside / "secret.md")
    files = Root(root, links=REFUSE)
    for path in ("../outside/secret.md", "/etc/passwd", "a\x00b", "topics/secret.md",
                 "passwd.md"):
        with pytest.raises(Refused):
            files.read(path, 1000)
    with pytest.raises(Refused, match="symlink"):
        files.write("topics/new.md", b"new")
    files.write("passwd.md", b"replaced")  # the symlink is replaced, not written through
    assert not (root / "passwd.md").is_symlink()
    assert (root / "passwd.md").read_bytes() == b"replaced"
    files.write("deep/er/new.md", b"made")
    assert files.read("deep/er/new.md", 100) == b"made"
    (root / "gone").symlink_to(outside / "secret.md")
    files.remove("gone")
    assert (outside / "secret.md").read_bytes() == CANARY and not os.path.lexists(root / "gone")
    assert sorted(p.name for p in outside.rglob("*")) == ["dir", "secret.md", "secret.md"]
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []


def test_caps_on_depth_and_entries_are_reported(tree):
    root, _ = tree
    deep = root.joinpath(*["d"] * 12)
    deep.mkdir(parents=True)
    (deep / "far.md").write_text("far")
    found = walk(root, max_depth=8)
    assert deep / "far.md" not in found.files
    assert any("deeper than 8 folders" in s.reason for s in found.skipped)
    for i in range(30):
        (root / f"many{i}.md").write_text("m")
    few = walk(root, max_entries=10)
    assert len(few.files) <= 10 and any("more than 10 entries" in s.reason for s in few.skipped)


# --- properties over hostile trees -------------------------------------------------------

KINDS = ["file", "big", "link_in", "link_in_dir", "link_out", "link_out_dir", "loop",
         "dangling", "fifo", "socket", "zero", "bad_name", "deep"]
NAMES = st.sampled_from(["a", "b", "c", "x.md", "y.md"])
ENTRY = st.tuples(st.lists(NAMES, min_size=1, max_size=3), st.sampled_from(KINDS))
CAP = 4096
DEPTH = 6

PROPERTIES = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                      suppress_health_check=[HealthCheck.too_slow])


def _build(base: Path, entries) -> tuple[Path, Path, list[tuple[Path, str]], list]:
    root, outside = base / "root", base / "outside"
    root.mkdir()
    (outside / "dir").mkdir(parents=True)
    (outside / "secret").write_bytes(CANARY)
    (outside / "dir" / "secret").write_bytes(CANARY)
    (root / "anchor").write_bytes(b"anchor")
    made, sockets = [], []
    for parts, kind in entries:
        path = root.joinpath(*parts)
        if os.path.lexists(path) or any(os.path.lexists(p) and not p.is_dir()
                                        or p.is_symlink() for p in path.parents):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind in ("file", "big"):
            path.write_bytes(b"ok" * (CAP if kind == "big" else 1))
        elif kind == "link_in":
            path.symlink_to(root / "anchor")
        elif kind == "link_in_dir":
            path.symlink_to(root)  # a folder link back to the root: a loop for a follower
        elif kind == "link_out":
            path.symlink_to(outside / "secret")
        elif kind == "link_out_dir":
            path.symlink_to(outside / "dir")
        elif kind == "loop":
            loop(path)
        elif kind == "dangling":
            path.symlink_to(outside / "missing")
        elif kind == "fifo":
            fifo(path)
        elif kind == "socket":
            sockets.append(unix_socket(path))
        elif kind == "zero":
            zero_device(path)
        elif kind == "bad_name":
            path = Path(os.fsdecode(os.fsencode(path) + b"\xff"))
            path.write_bytes(b"ok")
        elif kind == "deep":
            path = path.joinpath(*["d"] * (DEPTH + 2), "far")
            path.parent.mkdir(parents=True)
            path.write_bytes(b"ok")
        made.append((path, kind))
    return root, outside, made, sockets


def _accounted(path: Path, found, skipped: set[str]) -> bool:
    """Listed (itself or its real file), or reported (itself or a folder above it)."""
    if path in found.files or path in found.links:
        return True
    return any(confined.show(p) in skipped for p in (path, *path.parents))


@PROPERTIES
@given(st.lists(ENTRY, min_size=1, max_size=12))
def test_property_a_hostile_tree_is_walked_and_read_without_a_leak_or_a_hang(entries):
    with tempfile.TemporaryDirectory() as tmp:
        root, outside, made, sockets = _build(Path(tmp), entries)
        try:
            with deadline(30):
                found = walk(root, max_depth=DEPTH)
                read = {}
                for file in found:
                    try:
                        read[file] = confined.read_bytes(file, CAP)
                    except Refused as exc:
                        assert "over the limit" in exc.reason
        finally:
            for sock in sockets:
                sock.close()
        skipped = {s.path for s in found.skipped}
        for file in found.files:
            assert os.path.realpath(file) == str(file) and str(file).startswith(f"{root}/")
            assert stat.S_ISREG(os.lstat(file).st_mode)
        assert not any(CANARY in data for data in read.values())
        for path, kind in made:
            if kind == "link_in_dir":
                continue  # a folder inside: walked where it is, not through the link
            assert _accounted(path, found, skipped), (path, kind, found)
            if kind in ("file", "big"):
                assert path in found.files
            if kind in ("link_out", "link_out_dir", "loop", "dangling", "fifo", "socket",
                        "bad_name", "deep"):
                assert path not in found.files
        assert sorted(p.name for p in outside.rglob("*")) == ["dir", "secret", "secret"]


@PROPERTIES
@given(st.lists(ENTRY, min_size=1, max_size=8), st.lists(st.lists(NAMES, min_size=1,
                                                                   max_size=3), max_size=6))
def test_property_writes_stay_inside_the_root(entries, targets):
    with tempfile.TemporaryDirectory() as tmp:
        root, outside, _, sockets = _build(Path(tmp), entries)
        files = Root(root, links=REFUSE)
        try:
            with deadline(30):
                for parts in targets:
                    rel = "/".join(parts)
                    try:
                        files.write(rel, b"written")
                    except (Refused, NotADirectoryError, FileExistsError):
                        continue
                    assert files.read(rel, 100) == b"written"
                    assert not (root / rel).is_symlink()
        finally:
            for sock in sockets:
                sock.close()
        assert sorted(p.name for p in outside.rglob("*")) == ["dir", "secret", "secret"]
        assert (outside / "secret").read_bytes() == CANARY
        assert (outside / "dir" / "secret").read_bytes() == CANARY

