"""First contact (issue 22 points 4-6, 8): search before the vectors are made, a quiet and
correct terminal, commands that need an LLM, analytics on a fresh install."""

import json

import pytest
from test_embeddings import HashEmbedder, add_events, at
from typer.testing import CliRunner

from memory_platform.query import search as service
from memory_platform.query.coverage import describe, search_with_coverage
from memory_platform.query.embeddings import embed_missing


@pytest.fixture
def invoke(home):
    from memory_platform.cli.main import app

    runner = CliRunner()

    def call(*args: str):
        return runner.invoke(app, list(args))
    return call


# --- point 4: search never fails for want of vectors -------------------------------------


def test_hybrid_search_without_vectors_is_a_keyword_search_and_says_so(db):
    ids = add_events(db, "notes", [{"native_id": f"n{i}", "text": t, "occurred_at": at(1, 9, i)}
                                   for i, t in enumerate(["the staging port is 5433",
                                                          "lunch was good"])])
    embedder = HashEmbedder()
    hits, searched = search_with_coverage(db, "staging port", embedder=embedder)
    assert [h.event_id for h in hits] == [ids[0]]
    assert (searched.by_meaning, searched.by_keyword_only, searched.complete) == (0, 2, False)
    assert "keyword only" in describe(searched)
    with pytest.raises(service.SearchError, match="--mode keyword"):
        service.search(db, "staging port", mode="dense", embedder=embedder)


def test_a_partly_embedded_history_is_searched_both_ways(db):
    add_events(db, "notes", [{"native_id": f"n{i}", "text": f"note {i}",
                              "occurred_at": at(1, 9, i)} for i in range(5)])
    embedder = HashEmbedder()
    embed_missing(db, embedder)
    add_events(db, "notes", [{"native_id": "late", "text": "a late note about ports",
                              "occurred_at": at(2)}])
    hits, searched = search_with_coverage(db, "ports", embedder=embedder)
    assert hits[0].text == "a late note about ports"
    assert (searched.by_meaning, searched.by_keyword_only) == (5, 1)
    assert describe(searched).startswith("searched 5 of 6 events by meaning")
    _, full = search_with_coverage(db, "ports", embedder=embedder, mode="keyword")
    assert full.complete and describe(full) is None


def test_cli_search_json_is_one_object_with_what_was_searched(invoke, db, monkeypatch):
    add_events(db, "notes", [{"native_id": "a", "text": "the staging port is 5433",
                              "occurred_at": at(1)}])
    result = invoke("search", "staging port", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"query", "mode", "searched", "hits"}
    assert data["searched"]["by_keyword_only"] == 1 and data["searched"]["complete"] is False
    assert data["hits"][0]["text"] == "the staging port is 5433"
    plain = invoke("search", "staging port")
    assert plain.exit_code == 0 and "by keyword only" in plain.stderr
    dense = invoke("search", "staging port", "--mode", "dense")
    assert dense.exit_code == 1 and "--mode keyword" in dense.stderr


# --- point 6: commands that need an LLM ---------------------------------------------------


def _fake_claude(folder) -> str:
    folder.mkdir(exist_ok=True)
    script = folder / "claude"
    script.write_text("#!/bin/sh\necho '{\"type\": \"result\", \"subtype\": \"success\", "
                      "\"result\": \"ok\"}'\n")
    script.chmod(0o755)
    return str(folder)


def test_the_test_session_never_sees_a_real_claude():
    import shutil

    assert shutil.which("claude") is None


def test_claude_on_path_is_used_when_no_provider_is_set(tmp_path, caplog):
    from memory_platform.llm import providers

    env = {"PATH": _fake_claude(tmp_path / "bin"), "HOME": str(tmp_path)}
    settings = providers.LLMSettings.from_env(env)
    assert (settings.provider, settings.detected) == ("claude-cli", True)
    with caplog.at_level("WARNING", logger=providers.__name__):
        provider = providers.load_provider(settings)
        providers.load_provider(settings)
    assert provider.name == "claude-cli" and provider.executable.startswith(str(tmp_path))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "claude subscription login" in said[0]
    assert providers.llm_not_configured({"PATH": str(tmp_path / "empty")}) is not None
    chosen = providers.LLMSettings.from_env({**env, "MEMORY_PLATFORM_LLM_PROVIDER": "openai"})
    assert (chosen.provider, chosen.detected) == ("openai", False)


def test_dream_without_an_llm_says_so_before_importing_dagster(home, monkeypatch):
    import subprocess
    import sys
    import time

    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    code = ("import sys\nfrom memory_platform.cli.main import main\n"
            "sys.argv = ['memory-platform', 'dream']\n"
            "try:\n    main()\nfinally:\n"
            "    print('dagster imported' if 'dagster' in sys.modules else 'no dagster',"
            " file=sys.stderr)\n")
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    elapsed = time.perf_counter() - began
    assert done.returncode == 1
    assert "the dream needs an LLM" in done.stderr and "no dagster" in done.stderr
    assert elapsed < 20  # seconds, on a loaded machine; under one when quiet


# --- point 5: a quiet and correct terminal -----------------------------------------------


def test_a_file_of_another_kind_is_one_line(invoke, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("".join(f"line {i} of prose [red]:100:[/red]\n\n" for i in range(30)))
    result = invoke("import", "claude-code", str(readme))
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: {readme.resolve()}: README.md does not look like a Claude Code "
                     f"transcript: 30 of 30 lines are not JSON"]


def test_long_error_lists_are_capped_and_json_keeps_them_all(invoke, tmp_path):
    from helpers.transcripts import write_transcript

    path = tmp_path / "bad100.jsonl"
    write_transcript(path, 2)
    path.write_text(path.read_text() + "".join("{nope\n" for _ in range(30)))
    result = invoke("import", "claude-code", str(path))
    assert result.exit_code == 1
    listed = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(listed) == 20 and "and 10 more error(s)" in result.stderr
    assert "bad100.jsonl:3:" in listed[0]  # as written: no emoji, no markup
    data = json.loads(invoke("import", "claude-code", str(path), "--json").stdout)
    assert len(data["errors"]) == 30


def test_ctrl_c_is_one_line_and_exit_130(home, monkeypatch):
    from memory_platform.cli import common

    def interrupted():
        raise KeyboardInterrupt

    import click
    import typer
    with pytest.raises((typer.Exit, click.exceptions.Exit)) as stopped:
        common.run(interrupted)
    assert stopped.value.exit_code == 130


def test_the_last_progress_line_is_printed_once():
    from memory_platform.progress import Tracker

    now = [0.0]
    lines: list[str] = []
    tracker = Tracker("importing", "files", 2, report=lines.append, every=5.0,
                      clock=lambda: now[0])
    tracker.advance(1, events=10)
    now[0] = 6.0
    tracker.advance(1, events=10)  # reported: the interval passed
    tracker.finish()
    tracker.finish()
    assert len(lines) == 1 and lines[0].startswith("importing: 2/2 files, 20 events")
    tracker.advance(0, events=5)
    tracker.finish()
    assert len(lines) == 2


# --- point 8: analytics on a fresh install -----------------------------------------------


def test_a_vault_with_one_day_of_history_is_a_point():
    from datetime import date

    import matplotlib.dates as mdates

    from memory_platform.analytics import charts

    fig = charts.lines_figure("Vault size", [date(2026, 3, 4)], {"notes": [12.0]},
                              "memories", "the vault is empty")
    ax = fig.axes[0]
    low, high = (mdates.num2date(x).date() for x in ax.get_xlim())
    assert (high - low).days <= 7 and ax.lines[0].get_marker() == "o"


def test_the_spend_chart_counts_calls_of_unknown_price(monkeypatch):
    from datetime import date

    from memory_platform.analytics import charts, report

    drawn = {}
    monkeypatch.setattr(charts, "stacked_bars",
                        lambda title, days, series, *a, **k: drawn.update(title=title,
                                                                          series=series))
    day = date(2026, 3, 2)

    def per_day(rows, key, value):
        return {r[key]: [float(r[value])] for r in rows}
    report._spend_chart([{"day": day, "model": "claude-cli-default", "cost_usd": 0,
                          "calls": 3, "calls_cost_unknown": 3}], per_day, [day])
    assert drawn["series"] == {"claude-cli-default": [3.0]} and "calls" in drawn["title"]


def test_report_output_of_children_goes_to_a_log_file(tmp_path, capfd):
    import os
    import subprocess
    import sys

    from memory_platform.cli.common import output_to

    log = tmp_path / "logs" / "report.log"
    with pytest.raises(RuntimeError):
        with output_to(log):
            subprocess.run([sys.executable, "-c", "print('dbt noise')"], check=True)
            os.write(2, b"dagster noise\n")  # a logger on the real stderr
            raise RuntimeError("the run failed")
    print("{}")
    captured = capfd.readouterr()
    assert captured.out == "{}\n" and "noise" not in captured.err
    assert log.read_text().split() == ["dbt", "noise", "dagster", "noise"]
