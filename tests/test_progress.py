"""Progress lines: the tracker's arithmetic, and the lines an in-process import run sends to
a listening terminal (what `memory-platform up` prints while it imports)."""

from datetime import timedelta

import dagster as dg

from helpers.transcripts import write_transcript
from memory_platform import progress
from memory_platform.progress import Tracker


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tracker_reports_rate_and_time_left_at_most_every_interval():
    clock, lines = FakeClock(), []
    tracker = Tracker("importing", "files", 40, report=lines.append, every=5.0, clock=clock)
    clock.now += 2
    tracker.advance(4, events=1000)
    assert lines == []  # too soon
    clock.now += 8  # 10 s in: 10 files
    tracker.advance(6, events=2000)
    assert lines == ["importing: 10/40 files, 3,000 events, 1.0 files/s, about 0:00:30 left"]
    clock.now += 30
    tracker.advance(30)
    assert tracker.finish() == "importing: 40/40 files, 3,000 events, 1.0 files/s, in 0:00:40"
    assert lines[-1] == tracker.line()


def test_unknown_total_has_no_time_left_and_listeners_hear_every_line():
    clock, heard = FakeClock(), []
    with progress.listening(heard.append):
        tracker = Tracker("embedding", "events", clock=clock, every=0)
        clock.now += 4
        tracker.update(2000)
        tracker.update(4000, total=8000)
    assert heard == ["embedding: 2,000 events, 500 events/s",
                     "embedding: 4,000/8,000 events, 1,000 events/s, about 0:00:04 left"]
    tracker.update(8000)
    assert len(heard) == 2  # no longer listening


def test_an_in_process_ingest_run_reports_to_the_terminal(home, tmp_path, db):
    from memory_platform.definitions import defs
    from memory_platform.defs.ingest.jobs import ingest_raw_events_job
    from memory_platform.resources.common import range_tags

    write_transcript(tmp_path / "claude-projects" / "-p" / "s.jsonl", 30,
                     step=timedelta(hours=1))
    heard: list[str] = []
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([defs.get_assets_def("source_files")], instance=instance,
                          resources=defs.resources).success
    with progress.listening(heard.append):
        job = defs.resolve_job_def(ingest_raw_events_job.name)
        day = "2026-03-01"
        assert job.execute_in_process(instance=instance, tags=range_tags(day, "2026-03-02"))
    imports = [line for line in heard if line.startswith("importing raw events:")]
    embeds = [line for line in heard if line.startswith("embedding (")]
    assert imports and imports[-1].startswith("importing raw events: 1/1 files, 30 events")
    assert embeds and "30/30 events" in embeds[-1]
