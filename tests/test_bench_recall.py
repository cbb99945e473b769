"""`memory-platform bench recall --parts labelled`: the labelled set alone, on the masking
patterns as they are (precision must stay 1.00), and re-measuring one part keeps the
figures of the others in the JSON, each part dated with its load."""

import json

import pytest

from memory_platform.bench import recall


def test_the_hand_patterns_find_every_labelled_credential_and_nothing_else():
    found = recall.labelled(lambda line: None)["credentials"]["hand_patterns"]
    assert (found["precision"], found["recall"], found["wrong"]) == (1.0, 1.0, [])
    assert found["tp"] == 25


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
    assert written["labelled"]["credentials"]["hand_patterns"]["recall"] == 1.0
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
