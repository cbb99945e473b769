"""The UI first (issue 22 pts 2, 7): the progress line's cadence, and the daily
partitions starting at the earliest day of the history."""

import threading

from memory_platform import days, progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _snapshot(events: int, vectors: int) -> dict:
    return {"files": 57, "files_imported": 57, "events_expected": 6000, "events": events,
            "turns": 1757, "turns_with_vectors": min(vectors, 1757), "with_vectors": vectors,
            "with_text": 6000}


def test_the_progress_line_comes_every_five_seconds_even_when_a_read_is_slow():
    clock = FakeClock()
    lines, times = [], []
    vectors = iter(range(0, 6001, 500))

    def read() -> dict:
        clock.now += 3.0  # a slow count must not stretch the interval
        return _snapshot(6000, next(vectors))

    heart = progress.Heartbeat(read, lines.append, every=5.0, clock=clock)
    heart.phase = "vectors"
    stop = threading.Event()

    def wait(seconds: float) -> bool:
        times.append(clock.now + seconds)
        clock.now += seconds
        return len(times) > 6

    heart.run(stop, wait=wait)
    assert len(lines) == 6
    assert [t - 100.0 for t in times[:6]] == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    last = lines[-1]
    assert "57/57 files" in last and "6,000 events" in last
    assert "turns with vectors" in last and "events embedded/s" in last and "left" in last


def test_a_failing_count_is_said_not_swallowed():
    lines = []

    def read() -> dict:
        raise RuntimeError("database gone")

    progress.Heartbeat(read, lines.append).beat()
    assert lines == ["progress unavailable: RuntimeError: database gone"]


def test_partitions_start_at_the_earliest_day_and_move_earlier_only(home, monkeypatch):
    monkeypatch.delenv("MEMORY_PLATFORM_HISTORY_START", raising=False)
    assert days.history_start() == days.DEFAULT_HISTORY_START
    assert days.extend_history_start("2026-11-02") == "2026-11-02"
    assert days.history_start() == "2026-11-02"
    assert days.extend_history_start("2026-11-20") is None  # a later day: unchanged
    assert days.extend_history_start("2026-10-01") == "2026-10-01"  # an older export
    assert days.history_start() == "2026-10-01"
    monkeypatch.setenv("MEMORY_PLATFORM_HISTORY_START", "2025-01-01")
    assert days.history_start() == "2025-01-01"
    assert days.extend_history_start("2024-01-01") is None


def test_prepare_moves_the_partitions_start_to_the_demo_history(home, monkeypatch):
    from memory_platform import first_contact
    from memory_platform.settings import load_settings

    monkeypatch.delenv("MEMORY_PLATFORM_HISTORY_START", raising=False)
    said = []
    prepared = first_contact.prepare(load_settings(), demo=True, log=said.append)
    first, last = prepared["span"]
    assert days.history_start() == first == prepared["start"] > "2022-01-01"
    assert any("daily partitions start on" in line for line in said)


def test_the_dagster_instance_shows_no_sign_up_dialog(home):
    from memory_platform import launch
    from memory_platform.settings import load_settings

    settings = load_settings()
    config = settings.dagster_home / "dagster.yaml"
    config.write_text("telemetry:\n  enabled: false\n")  # written before the setting came
    instance = launch.prepare_instance(settings)
    assert instance.nux_enabled is False
    assert config.read_text().count("nux:") == 1
    launch.prepare_instance(settings)
    assert config.read_text().count("nux:") == 1
