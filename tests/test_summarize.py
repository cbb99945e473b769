"""summarize_range with a scripted LLM: paging, masking, citations checked by code."""

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from helpers.transcripts import cc_record
from memory_platform.ingest import importer as ingest
from memory_platform.llm import ScriptedProvider
from memory_platform.privacy.masking import mask_secrets
from memory_platform.query import summarize

DAY = datetime(2026, 3, 2, tzinfo=timezone.utc)


def _history(tmp_path, n=40, secret_at=5):
    path = tmp_path / "s.jsonl"
    lines = []
    for i in range(n):
        text = f"turn {i}: worked on the parser, port {8000 + i}"
        if i == secret_at:
            text = "my key is sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAA please keep it"
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps(cc_record(i, "s-sum", DAY + timedelta(minutes=10 * i), role,
                                          text=text)))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_map_reduce_with_checked_citations_and_masked_secrets(db, tmp_path, monkeypatch):
    ingest.import_path(db, "claude-code", _history(tmp_path))
    monkeypatch.setattr(summarize, "CHUNK_CHARS", 800)  # force several map calls

    def respond(call):
        ids = [int(i) for i in re.findall(r"^\[(\d+)\]", call.prompt, re.M)]
        if "Notes about" in call.prompt:
            cited = [int(i) for i in re.findall(r"\d+", call.prompt.split("\n\n", 1)[1])]
            return json.dumps({"summary": "Worked on the parser all day.",
                               "highlights": [{"text": "parser", "event_ids": cited[:3] + [999999]}]})
        return json.dumps({"points": [{"text": "parser work", "event_ids": ids[:2]}]})

    llm = ScriptedProvider(respond)
    result = summarize.summarize_range(db, llm, DAY, DAY + timedelta(days=1))
    assert result.events_read == 40
    assert result.chunks > 2 and result.llm_calls == result.chunks + 1
    assert result.invalid_citations == 1  # the invented id is dropped by code
    assert 999999 not in result.highlights[0]["event_ids"]
    assert result.secrets_masked == 1
    prompts = "\n".join(c.prompt for c in llm.calls)
    assert "sk-ant-api03" not in prompts and "[secret masked]" in prompts


def test_empty_range_and_bad_range(db):
    llm = ScriptedProvider([])
    result = summarize.summarize_range(db, llm, DAY, DAY + timedelta(days=1))
    assert result.events_read == 0 and llm.calls == []
    with pytest.raises(ValueError, match="empty range"):
        summarize.summarize_range(db, llm, DAY, DAY)


@pytest.mark.parametrize("text", [
    "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456",
    "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "postgres://app:hunter22@db.internal:5432/x",
    "AWS key AKIAIOSFODNN7EXAMPLE here",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "password = correct-horse-battery",
])
def test_secrets_are_masked(text):
    masked, hits = mask_secrets(text)
    assert hits >= 1 and "[secret masked]" in masked
    for secret in ("sk-proj-abc", "ghp_abc", "hunter22", "AKIAIOSFODNN7", "MIIEow", "correct-horse"):
        assert secret not in masked


def test_ordinary_text_is_left_alone():
    text = "error E0502 in src/main.rs; the port is 5433 and the commit is 3f2a9c1"
    assert mask_secrets(text) == (text, 0)
