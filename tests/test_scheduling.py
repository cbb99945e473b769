"""conftest.py's scheduling lists name real modules and tests: a renamed test would
otherwise drop silently into the everyday subset, or a renamed module out of FIRST."""

import re

from conftest import FIRST, REPO, SLOW


def test_first_and_slow_name_existing_modules_and_tests():
    tests = REPO / "tests"
    missing = []
    for entry in sorted(set(FIRST) | SLOW):
        module, _, test = entry.partition("::")
        path = tests / module
        if not path.is_file():
            missing.append(entry)
        elif test and not re.search(rf"^def {re.escape(test)}\(", path.read_text(), re.M):
            missing.append(entry)
    assert missing == []


def test_the_longest_modules_are_left_out_of_the_everyday_subset():
    assert set(FIRST) <= SLOW
