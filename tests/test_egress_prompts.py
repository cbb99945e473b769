"""Prompts are egress too (privacy.egress.outgoing): the curator's listing and the recall
classifier show a sensitive memory's personal data masked, and credentials always."""

from memory_platform.curator import listing
from memory_platform.llm.scripted import ScriptedProvider
from memory_platform.recall import classify
from memory_platform.store import memories as memory_store

EMAIL = "ana.lopez@acme-corp.com"
PHONE = "+33 6 12 34 56 78"
KEY = "AKIAIOSFODNN7EXAMPLE"


def _add(db, text: str, **kw) -> int:
    with db.connect() as conn:
        return memory_store.add_memory(conn, namespace="acme", text=text, actor="test",
                                       category=kw.pop("category", "project"), **kw)[0]


def test_the_curator_listing_masks_a_sensitive_memorys_personal_data(db):
    _add(db, f"Ana runs acme ops: write to {EMAIL} or call {PHONE}", topic="ops")
    _add(db, f"The acme CI uses aws_access_key_id={KEY}", topic="ci")
    _add(db, "The acme API listens on port 8080", topic="api")
    shown = listing.build(db, "acme")
    text = "\n".join(c.text for c in listing.chunks(shown, 10_000))
    assert EMAIL not in text and PHONE not in text and KEY not in text, text
    assert "[email masked]" in text and "port 8080" in text


def test_the_classifier_prompt_masks_a_sensitive_memory(db):
    _add(db, f"Ana from acme ops answers at {EMAIL}", topic="unsorted", category="episode")
    _add(db, f"deploys sign with aws_access_key_id={KEY}", topic="unsorted",
         category="episode")
    llm = ScriptedProvider(
        lambda call: '{"category": "episode", "topic": "ops", "confident": false}')
    done = classify.refine_unsorted(db, llm, "acme")
    assert done["llm_calls"] == 2
    prompts = "\n".join(c.prompt for c in llm.calls)
    assert EMAIL not in prompts and KEY not in prompts, prompts
    assert "[email masked]" in prompts


def test_the_digest_quotes_a_cut_memory_masked(db, tmp_path):
    """The digest goes to a file and a webhook: a cut memory it quotes passes egress."""
    from datetime import date, datetime, timezone

    from helpers.curator import ACME, answering, make_repo, seed
    from memory_platform.curator.config import CuratorConfig
    from memory_platform.curator.execute import execute
    from memory_platform.curator.propose import propose
    from memory_platform.dream.digest import build_digest

    week = date(2026, 11, 29)
    repo = make_repo(tmp_path)
    seed(db, "acme", ACME + [f"Old CI key aws_access_key_id={KEY}, owner {EMAIL}"])
    config = CuratorConfig(repos={"acme": repo["path"]})

    def plan(handles):
        secret = handles[next(t for t in handles if "Old CI key" in t)]
        return {"cuts": [{"handle": secret, "reason": "secret", "evidence": [
            {"handle": secret, "note": "holds a key"}]}]}

    propose(db, "acme", week, agent=lambda: ScriptedProvider(answers=answering(plan)),
            dagster_run_id="run-d", config=config, repo=repo["path"])
    execute(db, "acme", week, dagster_run_id="run-d", config=config)
    markdown, figures = build_digest(db, [datetime.now(timezone.utc).date()], run_id="r")
    assert figures["curator_cuts_last_week"] == 1 and "Old CI key" in markdown
    assert KEY not in markdown and EMAIL not in markdown, markdown


def test_a_merge_written_over_a_mask_is_not_staged(db, tmp_path):
    """The listing shows a sensitive memory's e-mail masked; a merge the model writes from
    it would replace the fact with the mask when approved: it is not staged (the sources
    stay as they are), a merge without a mask is."""
    from datetime import date

    from helpers.curator import ACME, answering, make_repo, seed
    from memory_platform.curator.config import CuratorConfig
    from memory_platform.curator.execute import execute
    from memory_platform.curator.propose import propose
    from memory_platform.store import memories as store

    repo = make_repo(tmp_path)
    seed(db, "acme", ACME + [f"Ana owns the deploys, mail {EMAIL}", "Ana is on call Mondays"])
    config = CuratorConfig(repos={"acme": repo["path"]})

    def plan(handles):
        ana = [h for t, h in handles.items() if t.startswith("Ana ")]
        tools = [handles["The project is written in Python."], handles["Tests run with pytest."]]
        return {"cuts": [], "merges": [
            {"handles": ana, "text": "Ana owns the deploys (mail [email masked]), on call "
                                     "Mondays", "why": "one person"},
            {"handles": tools, "text": "Python, tested with pytest.", "why": "toolchain"}]}

    week = date(2026, 11, 29)
    propose(db, "acme", week, agent=lambda: ScriptedProvider(answers=answering(plan)),
            dagster_run_id="run-m", config=config, repo=repo["path"])
    execute(db, "acme", week, dagster_run_id="run-m", config=config)
    with db.connect() as conn:
        staged = [m["text"] for m in store.list_memories(conn, "acme__dream")]
    assert staged == ["Python, tested with pytest."], staged
