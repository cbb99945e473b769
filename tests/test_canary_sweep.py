"""The canary sweep (issue 20, "make it structural"): canaries planted in a real database
and home (helpers/canary.py), then every LLM prompt of the dream, digest, classifier,
curator and orchard, every REST route, every MCP tool, every hook, the CLI's read
commands, the wiki files and the curator's repository tools, as each kind of caller; no
canary may appear where that caller may not see it. The calls come from the route table,
the tool lists and the CLI's command tree, so a face added tomorrow is swept too (or fails
here until it can be). The sweep's size and time are printed, and written to
benchmarks/results/canary-sweep.json when MEMORY_PLATFORM_WRITE_RESULTS=1 (so that a test
run leaves the tree as it was).
"""

import json
import os
import time
from pathlib import Path

import pytest

from helpers.api import HashEmbedder, thread_recorder
from helpers.canary import ADMIN, PERSONAL_MARK, Sweep, plant
from helpers.canary_faces import (
    check_prompts,
    sweep_cli,
    sweep_curator_tools,
    sweep_hooks,
    sweep_prompts,
    sweep_wiki,
)
from helpers.canary_rest import sweep_mcp, sweep_rest
from memory_platform.api.app import create_app
from memory_platform.llm import ScriptedProvider

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "canary-sweep.json"
BUDGET_S = 60.0
# Reads no caller gets a 2xx/3xx from in this world, each for its reason (any other read
# that answers nobody means the sweep's sample values miss it: fix them).
UNANSWERED_READS = {
    "GET /reports/{week}", "GET /reports/{week}/{name}",  # no weekly report is built here
}
# An answer every schema of the product's prompts accepts (unknown keys are ignored): the
# sweep is about what the prompts carry, not about what the model says.
ANY = json.dumps({"points": [], "summary": "nothing", "highlights": [], "memories": [],
                  "advice": "nothing", "order": [], "cuts": [], "merges": []})


def any_answer(call):
    return ANY


@pytest.fixture
def canaries(db, home, tmp_path):
    return plant(db, home, tmp_path)


def test_no_canary_reaches_a_caller_that_may_not_see_it(db, home, canaries, monkeypatch):
    started = time.perf_counter()
    sweep = Sweep()
    llm = ScriptedProvider(any_answer)
    app = create_app(db, token=ADMIN, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                     llm=llm, recorder=thread_recorder())
    faces = [("prompts", lambda: sweep_prompts(db, canaries, sweep, any_answer)),
             ("rest", lambda: sweep_rest(app, canaries, sweep)),
             ("mcp", lambda: sweep_mcp(db, canaries, sweep, llm)),
             ("hooks", lambda: sweep_hooks(sweep, home, monkeypatch)),
             ("cli", lambda: sweep_cli(sweep, monkeypatch)),
             ("wiki", lambda: sweep_wiki(sweep, home)),
             ("curator tools", lambda: sweep_curator_tools(sweep, canaries.repo)),
             ("rest writes", lambda: sweep_rest(app, canaries, sweep, writes=True)),
             ("summary prompts", lambda: check_prompts(sweep, "summaries (REST, MCP)", llm))]
    seconds_by_face = {}
    for face, run in faces:
        began = time.perf_counter()
        run()
        seconds_by_face[face] = round(time.perf_counter() - began, 2)
    seconds = time.perf_counter() - started
    figures = {
        "canaries_planted": canaries.planted, "canaries": sum(canaries.planted.values()),
        "calls": sweep.calls, "calls_total": sum(sweep.calls.values()),
        "rest_routes": len(sweep.routes), "prompts_checked": sweep.calls.get("prompt", 0),
        "seconds": round(seconds, 1), "seconds_by_face": seconds_by_face,
        "load_average_1m": round(os.getloadavg()[0], 2), "leaks": len(sweep.leaks),
    }
    print(json.dumps(figures))
    print("\n".join(sweep.leaks))
    if os.environ.get("MEMORY_PLATFORM_WRITE_RESULTS") == "1":  # a test run leaves the tree
        RESULTS.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    # the sweep is not vacuous: the canaries were there to be found, and shown masked
    for face, shown in [("rest", PERSONAL_MARK), ("rest", "[secret masked]"),
                        ("mcp", "[secret masked]"), ("cli", "[secret masked]"),
                        ("prompt", "[secret masked]"), ("hook", "additionalContext"),
                        ("rest", "[email masked]"), ("mcp", "[email masked]"),
                        ("cli", "[email masked]")]:
        assert (face, shown) in sweep.seen, f"no {face} answer showed {shown!r}"
    unanswered = {r for r in sweep.routes - sweep.answered if r.startswith("GET ")}
    assert unanswered == UNANSWERED_READS, f"reads no caller got an answer from: {unanswered}"
    assert not sweep.leaks, "\n".join(sweep.leaks[:60]) + f"\n({len(sweep.leaks)} in all)"
    assert seconds < BUDGET_S, f"the sweep took {seconds:.0f} s (budget {BUDGET_S:.0f} s)"
