"""Claude Code's session boundaries (issue 23, point 4): a SessionStart after /clear or a
compaction re-injects the pack, and starts the session's record of what it was given
afresh."""

import json
import re

import pytest

from helpers.recall_vault import seed
from memory_platform.recall import hooks


@pytest.mark.parametrize("source", ["clear", "compact"])
def test_clear_and_compact_re_inject_the_pack(db, home, source):
    ids = seed(db, home)
    start = {"session_id": "s-1", "cwd": "/src/acme-api", "hook_event_name": "SessionStart",
             "source": "startup"}
    first = hooks.run_hook("SessionStart", json.dumps(start), relevance="keyword", db=db)
    again = hooks.run_hook("SessionStart", json.dumps({**start, "source": source}),
                           relevance="keyword", db=db)
    assert again == first and f"[#{ids['port']}]" in again
    given = re.findall(r"\[#(\d+)\]\n", json.loads(again)["hookSpecificOutput"]
                       ["additionalContext"] + "\n")
    assert ids["port"] in hooks.seen_ids(home, "s-1") == {int(x) for x in given}
