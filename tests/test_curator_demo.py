"""The curator over the demo: `memory-platform up` on a machine with no history seeds a demo
vault (three namespaces, the project one tied to a small demo git repository) beside the
demo history; then `memory-platform curate --dry-run` and real weekly runs through the
in-process Dagster path (launch.run_curate), with an OpenAI-compatible HTTP stub as the
model: in the repository it runs the tool loop (grep, git log, list files) and answers from
the listing it was shown and what the tools returned. Proposed cuts carry evidence, only a
valid verdict under the ceiling is executed, the decision records are kept, a cut is
restored, and the rest are purged (with a record) once the window has passed."""

import json
import re
from datetime import datetime, timedelta, timezone

import dagster as dg
import pytest
from typer.testing import CliRunner

from helpers.api import HashEmbedder
from helpers.curator import handles_in
from helpers.vendor_stubs import OPENAI_PATH, Reply, VendorStub
from memory_platform import launch
from memory_platform.curator import archive, service
from memory_platform.curator.config import CuratorConfig
from memory_platform.settings import load_settings
from memory_platform.store import memories as memory_store
from memory_platform.synthetic import demo_vault
from memory_platform.synthetic.demo_repo import IMPORTER_MOVED
from memory_platform.vault.demo import demo_repo_path, seed_demo_vault
from memory_platform.vault.tokens import Scope

EVERYTHING = Scope.everything()
DECISIONS = [m.text for m in demo_vault.MEMORIES if m.kind == "decision"]
TO_CUT = {m.text: m for m in demo_vault.MEMORIES if m.kind in ("stale", "duplicate",
                                                                  "contradicted")}
# Dagster 1.13 tags a run of a multi-partitioned asset with `dagster/partition/<dimension>`
# and then warns about its own tag (see tests/test_curator_dagster.py).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Non-compliant tag keys like \\['dagster/partition/:DeprecationWarning")


def _completion(content: str | None = None, tool_calls: list | None = None) -> dict:
    message = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
            "name": name, "arguments": json.dumps(args)}} for i, (name, args) in
            enumerate(tool_calls)]
    return {"id": "chatcmpl-demo", "object": "chat.completion", "created": 1_700_000_000,
            "model": "demo-curator", "choices": [{
                "index": 0, "message": message, "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020}}


class DemoCurator(VendorStub):
    """A careful model behind the OpenAI-compatible wire format. In a repository it first
    reads (grep for the port, git log, the source files), then cuts the demo's stale
    memories with the evidence the tools returned and its duplicates and contradicted
    memory by handle; without a repository it judges the listing alone. It keeps the
    decision records, unless `careless`: then it also cuts the FTS5 decision on a date."""

    careless = False

    def _take(self, request) -> Reply:
        with self._lock:
            self.requests.append(request)
        try:
            return Reply(200, self.answer(request.body))
        except Exception as exc:  # surfaces in the run as the model's failure, with why
            return Reply(599, {"error": {"type": "stub_error", "message": repr(exc)}},
                         {"x-should-retry": "false"})

    def answer(self, body: dict) -> dict:
        messages = body["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        namespace = re.search(r"^Namespace: ([\w.-]+)\.", task, re.M).group(1)
        results = "\n".join(m["content"] for m in messages if m["role"] == "tool")
        if body.get("tools") and not results:
            return _completion(tool_calls=[("grep", {"pattern": r"^port\s*="}),
                                           ("git_log", {"limit": 50}),
                                           ("list_files", {"path": "src/bookminder"})])
        verdict = self.verdict(namespace, handles_in(task), results)
        return _completion(content=json.dumps(verdict))

    def verdict(self, namespace: str, handles: dict[str, int], tools: str) -> dict:
        cuts = []
        for text, memory in TO_CUT.items():
            if memory.namespace != namespace or text not in handles:
                continue
            if memory.kind != "stale":
                cuts.append({"handle": handles[text], "reason": memory.kind,
                             "of": handles[memory.of], "evidence": [{
                                 "handle": handles[memory.of], "note": "says the same, later"
                                 if memory.kind == "contradicted" else "same statement"}]})
            elif text == demo_vault.PORT_MEMORY:
                file, line, port = re.search(r"^(\S+):(\d+): port = (\d+)$", tools,
                                             re.M).groups()
                commit = re.search(r"^(\w+) \S+ Dana: Serve the API on port", tools, re.M)
                cuts.append({"handle": handles[text], "reason": "contradicted", "evidence": [
                    {"file": file, "line": int(line), "note": f"port = {port}"},
                    {"commit": commit.group(1), "note": "the port moved"}]})
            else:
                commit = re.search(r"^(\w+) \S+ Dana: Move the Kindle importer", tools, re.M)
                assert IMPORTER_MOVED in tools
                cuts.append({"handle": handles[text], "reason": "stale", "evidence": [
                    {"commit": commit.group(1), "note": "the module moved"},
                    {"file": IMPORTER_MOVED, "line": 1, "note": "where it lives now"}]})
        if self.careless and namespace == demo_vault.PROJECT:
            cuts.append({"handle": handles[demo_vault.FTS5_DECISION], "reason": "stale",
                         "evidence": [{"date": "2026-01-01", "note": "FTS5 is long gone"}]})
        return {"cuts": cuts, "merges": [], "contradictions": []}


def memories(db, namespace: str, status: str | None = None) -> dict[str, dict]:
    with db.connect() as conn:
        rows = memory_store.list_memories(conn, namespace, after_id=0, limit=1000,
                                          status=status)
    return {r["text"]: r for r in rows}


def by_text(db) -> dict[str, int]:
    return {text: row["id"] for ns in demo_vault.NAMESPACES
            for text, row in memories(db, ns).items()}


def status(db, memory_id: int) -> str:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)["status"]


def archived(db) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) FROM curator_archive").fetchone()[0]


# --- seeding ----------------------------------------------------------------------------


def test_the_demo_vault_is_seeded_once_tied_to_its_repository_and_never_over_a_vault(home, db):
    settings = load_settings()
    said = []
    first = seed_demo_vault(db, settings, embedder=HashEmbedder(), log=said.append)
    assert first["seeded"] == len(demo_vault.MEMORIES) == 24 and first["tie"] == "written"
    counts = {ns: len(memories(db, ns, "active")) for ns in demo_vault.NAMESPACES}
    assert counts == {"bookminder": 12, "tidepool": 6, "personal": 6}
    with db.connect() as conn:
        actors = conn.execute("SELECT DISTINCT actor, action FROM vault_audit").fetchall()
        vectors = conn.execute("SELECT count(*) FROM memory_embeddings").fetchone()[0]
    assert actors == [("demo", "add")] and vectors == 24
    repo = demo_repo_path(settings)
    assert CuratorConfig.load(settings).repo_for("bookminder") == repo.resolve()
    assert 'bookminder = "demo-repos/bookminder"' in settings.routing_file.read_text()
    assert "port = 8081" in (repo / "config/settings.toml").read_text()
    assert (repo / IMPORTER_MOVED).is_file() and "seeded a demo vault: 24" in said[-1]

    again = seed_demo_vault(db, settings, embedder=HashEmbedder(), log=said.append)
    assert again["seeded"] == 0 and "already holds bookminder" in said[-1]
    assert sum(len(memories(db, ns)) for ns in demo_vault.NAMESPACES) == 24


def test_the_demo_vault_stays_out_of_a_real_vault_and_a_users_routing_file(home, db,
                                                                          database_url):
    from memory_platform.vault import memories as vault

    settings = load_settings()
    vault.add(db, "work", "Deploys go out on Fridays.", "project", "cli:dana",
              embedder=HashEmbedder())
    said = []
    assert seed_demo_vault(db, settings, embedder=HashEmbedder(), log=said.append)["seeded"] == 0
    assert not demo_repo_path(settings).exists() and not settings.routing_file.exists()
    assert memories(db, "work").keys() == {"Deploys go out on Fridays."}

    # an empty vault, but the user's own routing file: memories and repository, no tie
    with db.connect() as conn:
        conn.execute("TRUNCATE vault_audit, memory_embeddings, memories, vault_namespaces "
                     "CASCADE")
    settings.routing_file.write_text('default = "personal"\n')
    result = seed_demo_vault(db, settings, embedder=HashEmbedder(), log=said.append)
    assert result["seeded"] == 24 and result["tie"] is None
    assert settings.routing_file.read_text() == 'default = "personal"\n'
    assert any("is yours" in line and "bookminder = " in line for line in said)


# --- the weekly run over the demo ---------------------------------------------------------


def test_a_weekly_run_over_the_demo_cuts_with_evidence_keeps_decisions_and_purges(
        home, db, monkeypatch):
    from memory_platform.cli.main import app

    said = []
    launch.bring_up(load_settings(), demo=True, log=said.append)
    assert any("generated a demo history" in line for line in said)
    assert any("seeded a demo vault: 24 memories" in line for line in said)
    ids = by_text(db)
    assert len(ids) == 24

    with DemoCurator() as model:
        for key, value in {"MEMORY_PLATFORM_LLM_PROVIDER": "openai-compatible",
                           "MEMORY_PLATFORM_LLM_BASE_URL": model.openai_base_url,
                           "MEMORY_PLATFORM_LLM_MODEL": "demo-curator"}.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()

        # the dry run: proposed cuts with reasons and evidence, nothing cut
        dry = CliRunner().invoke(app, ["curate", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert "bookminder (week" in dry.output and "dry_run" in dry.output
        port = ids[demo_vault.PORT_MEMORY]
        assert re.search(rf"cut #{port} \[contradicted\] The bookminder API listens on port "
                         rf"8080\.\n\s+evidence config/settings.toml:4: port = 8081\n\s+"
                         rf"evidence commit \w+: the port moved", dry.output), dry.output
        assert f"cut #{ids[demo_vault.IMPORTER_MEMORY]} [stale]" in dry.output
        assert f"evidence {IMPORTER_MOVED}:1" in dry.output
        assert "[contradicted (of #" in dry.output and "[duplicate (of #" in dry.output
        assert archived(db) == 0
        # the tool loop ran in the demo repository, and read the current config there
        tooled = [r for r in model.requests_to(OPENAI_PATH) if r.body.get("tools")]
        tool_results = [m["content"] for r in tooled for m in r.body["messages"]
                        if m["role"] == "tool"]
        assert "config/settings.toml:4: port = 8081" in tool_results
        assert all(r.body["model"] == "demo-curator" for r in tooled)

        # a careless verdict (a decision record cut on a date) refuses the whole run
        model.careless = True
        [careless] = launch.run_curate(settings, namespace="bookminder", log=said.append)
        assert careless["status"] == "refused" and careless["refusal"] == "invalid_verdict"
        assert "records a decision" in careless["detail"] and archived(db) == 0
        model.careless = False

        # the real weekly run: every namespace, valid verdicts, under each ceiling
        outcomes = {o["namespace"]: o for o in launch.run_curate(settings, log=said.append)}
    assert {ns: o["status"] for ns, o in outcomes.items()} == {
        "bookminder": "executed", "personal": "executed", "tidepool": "executed"}
    cut = {ns: set(o["cut"]) for ns, o in outcomes.items()}
    assert cut == {ns: {ids[t] for t, m in TO_CUT.items() if m.namespace == ns}
                   for ns in demo_vault.NAMESPACES}
    assert {ns: (len(o["cut"]), o["max_cuts"]) for ns, o in outcomes.items()} == {
        "bookminder": (4, 4), "tidepool": (1, 2), "personal": (1, 1)}
    assert all(status(db, ids[text]) == "active" for text in DECISIONS)
    assert all(status(db, i) == "cut" for ids_ in cut.values() for i in ids_)
    with dg.DagsterInstance.get() as instance:  # the runs are on the UI's instance
        jobs = [r.dagster_run.job_name for r in instance.get_run_records(
            dg.RunsFilter(tags={"memory-platform/trigger": "cli"}))]
    assert jobs.count("curator_dry_run_job") == 3 and jobs.count("curator_job") == 4

    archived_port = next(c for c in service.cuts(db, EVERYTHING, namespace="bookminder")
                         if c["memory_id"] == port)
    assert {"file": "config/settings.toml", "line": 4, "note": "port = 8081"} in \
        archived_port["evidence"]

    # restore one cut; the others stay restorable until the window ends, then are purged
    restored = CliRunner().invoke(app, ["curator", "restore", str(port)])
    assert restored.exit_code == 0, restored.output
    assert status(db, port) == "active" and f"restored #{port}" in restored.output
    with db.connect() as conn:
        last = conn.execute("SELECT action FROM vault_audit WHERE memory_id = %s "
                            "ORDER BY id DESC LIMIT 1", (port,)).fetchone()[0]
    assert last == "curator_restore"
    later = datetime.now(timezone.utc) + timedelta(days=15)
    importer = ids[demo_vault.IMPORTER_MEMORY]
    with pytest.raises(archive.RestoreRefused, match="restore window ended"):
        service.restore(db, EVERYTHING, importer, actor="test", now=later)
    purged = archive.purge(db, purged_by="test-purge", now=later)
    assert {p["memory_id"] for p in purged} == set().union(*cut.values()) - {port}
    records = service.purges(db, EVERYTHING)
    assert len(records) == 5 and all(len(r["content_hash"]) == 64 for r in records)
    with pytest.raises(archive.RestoreRefused, match="was purged"):
        service.restore(db, EVERYTHING, importer, actor="test", now=later)
    assert status(db, importer) == "purged" and archive.invariant(db)["ok"]
    assert all(status(db, ids[text]) == "active" for text in DECISIONS)
