"""A fresh clone tests alone: ../shared (benchmark data, design docs) is for benchmarks only.

conftest.py's audit hook fails any test that opens or lists a path under ../shared; these
check the hook itself, and that no test names ../shared or the benchmark data in its source.
"""

import os
import re
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES, SHARED, SharedReadError, shared_reads

TESTS = REPO / "tests"
# A path into ../shared spelled in a test: "../shared", REPO.parent / "shared", "benchdata".
NAMES_SHARED = re.compile(r"""\.\./shared|parent\s*/\s*["']shared|benchdata|BENCHDATA""")


def test_no_test_names_shared_or_the_benchmark_data():
    offenders = [
        f"{path.relative_to(REPO)}:{n}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name not in ("conftest.py", "test_fresh_clone.py")  # the guard and its test
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if NAMES_SHARED.search(line)
    ]
    assert offenders == []


def test_the_samples_live_in_the_repository():
    assert SAMPLES.is_relative_to(REPO / "tests" / "data")
    assert (SAMPLES / "SOURCES.md").is_file() and any((SAMPLES / "licenses").iterdir())
    listed = set(re.findall(r"^\| `([^`]+)` \|", (SAMPLES / "SOURCES.md").read_text(), re.M))
    present = {p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*")
               if p.is_file() and p.parent.name != "licenses" and p.name != "SOURCES.md"}
    assert present == listed  # every file's provenance is written down


@pytest.mark.parametrize("how", ["open", "listdir", "scandir"])
def test_reading_shared_fails_the_test(how):
    target = Path(sorted(SHARED)[0]) / "formats" / "samples"
    act = {"open": lambda: open(target / "SOURCES.md", "rb"),
           "listdir": lambda: os.listdir(target),
           "scandir": lambda: os.scandir(target)}[how]
    with pytest.raises(SharedReadError, match="benchmarks only"):
        act()
    # Caught or not, the read is recorded, and conftest's autouse fixture fails the test on
    # it; cleared here so that this test, which read on purpose, passes.
    assert shared_reads == [str(target / "SOURCES.md") if how == "open" else str(target)]
    shared_reads.clear()


def test_paths_beside_shared_are_not_caught():
    # /work/wt/shared-notes is not ../shared: the prefix check stops at a separator.
    sibling = Path(sorted(SHARED)[0] + "-not-it")
    with pytest.raises(FileNotFoundError):
        open(sibling / "x")
    assert shared_reads == []
