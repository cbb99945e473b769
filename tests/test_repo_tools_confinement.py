"""The curator's repository tools find and read files through the confined reader (issue 20,
defect 6, the file side): `.git` stays unreadable through an in-repo symlink, a FIFO or a
device in the repository blocks no tool, and every refusal is an answer the model reads."""

import pytest

from helpers.curator import make_repo
from helpers.hostile_tree import deadline, fifo, zero_device
from memory_platform.curator.repo_tools import RepoTools


@pytest.fixture
def repo(tmp_path):
    made = make_repo(tmp_path)
    path = made["path"]
    (path / "gitlink").symlink_to(".git")  # a folder symlink inside the repo, into .git
    (path / "config.lnk").symlink_to(path / ".git" / "config")  # a file symlink into .git
    (path / "src" / "head").symlink_to("../.git/HEAD")
    return made


def test_git_is_not_readable_through_an_in_repo_symlink(repo):
    tools = RepoTools(repo["path"])
    config = (repo["path"] / ".git" / "config").read_text()
    assert "[core]" in config
    for args in ({"path": "gitlink/config"}, {"path": "config.lnk"}, {"path": "src/head"},
                 {"path": "gitlink/HEAD"}):
        answer = tools.call("read_file", args)
        assert answer.startswith("refused:") and "[core]" not in answer, (args, answer)
        assert "ref: refs/heads" not in answer
    listed = tools.call("list_files", {})
    assert "config.lnk" not in listed.splitlines() and "gitlink" not in listed
    assert tools.call("list_files", {"path": "gitlink"}).startswith("refused:")
    for path in (".", "gitlink", "src"):
        answer = tools.call("grep", {"pattern": "repositoryformatversion|refs/heads",
                                     "path": path})
        assert "repositoryformatversion" not in answer and "refs/heads" not in answer, answer
    shown = tools.call("git_show", {"commit": repo["second"][:8], "path": "gitlink/config"})
    assert shown.startswith("refused:")
    assert "+port = 9090" in tools.call("git_show", {"commit": repo["second"][:8]})


def test_a_fifo_or_a_device_in_the_repository_blocks_no_tool(repo):
    fifo(repo["path"] / "src" / "pipe.py")
    zero_device(repo["path"] / "src" / "zero.py")
    tools = RepoTools(repo["path"])
    with deadline(60):
        read = tools.call("read_file", {"path": "src/pipe.py"})
        zero = tools.call("read_file", {"path": "src/zero.py"})
        grep = tools.call("grep", {"pattern": "tomllib"})
        listed = tools.call("list_files", {"path": "src"})
    assert read.startswith("refused:") and "FIFO" in read
    assert zero.startswith("refused:")
    assert "src/app.py:1" in grep
    assert "src/app.py" in listed.splitlines() and "src/pipe.py" not in listed.splitlines()


def test_a_nul_or_an_absolute_path_is_refused(repo):
    tools = RepoTools(repo["path"])
    for path in ("src/app.py\x00.txt", "/etc/passwd", "../acme/README.md", "~root/x"):
        assert tools.call("read_file", {"path": path}).startswith("refused:"), path
