"""`memory-platform bench recall --parts labelled`: the labelled set alone, on the masking
patterns as they are (precision must stay 1.00, prose recall at least 0.9), and re-measuring one part keeps the
figures of the others in the JSON, each part dated with its load."""

import json

import pytest

from memory_platform.bench import recall


def test_the_hand_patterns_find_the_labelled_credentials_and_nothing_else():
    """No look-alike is flagged (precision 1.00), every credential written as a key, a
    URL or a token's own shape is found, and of those written as prose (issue 20) at most
    one in ten is missed; each miss is a prose case (BENCHMARKS.md lists them)."""
    found = recall.labelled(lambda line: None)["credentials"]["hand_patterns"]
    cases = [json.loads(line) for line in recall.CASES.read_text().splitlines() if line]
    credentials = [c for c in cases if "credential" in c["kinds"]]
    prose = {c["text"] for c in credentials if c["note"] == "prose credential"}
    assert len(prose) >= 50 and len(credentials) - len(prose) == 25
    assert found["precision"] == 1.0 and found["fp"] == 0
    assert set(found["wrong"]) <= prose, set(found["wrong"]) - prose
    assert found["tp"] + found["fn"] == len(credentials)
    assert found["fn"] <= len(prose) // 10


def test_one_part_re_measured_keeps_the_others(tmp_path):
    out = tmp_path / "recall.json"
    earlier = {"benchmark": "recall", "measured_at": "2026-12-01T15:26:00+00:00",
               "machine": {"uptime_at_start": "load average: 14.43",
                           "uptime_at_end": "load average: 7.16"},
               "labelled": {"stale": True}, "scale": {"lint_s": 5.7}, "hooks": {"n": 40}}
    out.write_text(json.dumps(earlier))
    report = recall.run(out, parts=("labelled",), log=lambda line: None)
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(report, default=str))
    assert written["scale"] == {"lint_s": 5.7} and written["hooks"] == {"n": 40}
    assert "stale" not in written["labelled"]  # measured again, not kept
    assert written["labelled"]["credentials"]["hand_patterns"]["precision"] == 1.0
    dated = written["parts_measured"]
    assert list(dated) == ["labelled", "scale", "hooks"]
    assert dated["scale"] == {"measured_at": "2026-12-01T15:26:00+00:00",
                              "uptime_at_start": "load average: 14.43",
                              "uptime_at_end": "load average: 7.16"}
    assert dated["labelled"]["measured_at"] == written["measured_at"] != earlier["measured_at"]
    assert "load average" in dated["labelled"]["uptime_at_end"]

    again = recall.run(out, parts=("labelled",), log=lambda line: None)
    assert again["parts_measured"]["scale"] == dated["scale"]  # kept as dated, not re-dated


def test_an_unknown_part_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="unknown part.*labeled.*use any of labelled"):
        recall.run(tmp_path / "r.json", parts=("labeled",), log=lambda line: None)
    assert not (tmp_path / "r.json").exists()
