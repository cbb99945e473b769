"""How far long work got. A `Tracker` turns counts into a line with the rate and the time
left ("importing: 12/40 files, 35,210 events, 1,204 events/s, about 0:00:31 left"), at most
every few seconds. The assets send each line to the run's log (the Dagster UI shows it);
a terminal that waits on an in-process run (`memory-platform up`, `dream`) listens too
(`listening`), so a long import or embedding is never minutes of silence.
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listeners: list[Callable[[str], None]] = []
_lock = threading.Lock()


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Send every progress line of this process to `listener` while the block runs."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def emit(line: str) -> None:
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(line)


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Tracker:
    """Counts of one piece of work. `total` (of the main unit) may be unknown (None): the
    line then has no time left. `report` receives each line (also sent to `emit`)."""

    def __init__(self, what: str, unit: str, total: int | None = None, *,
                 report: Callable[[str], None] | None = None, every: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.what, self.unit, self.total = what, unit, total
        self.done = 0
        self.extra: dict[str, int] = {}
        self._report = report
        self._every = every
        self._clock = clock
        self._started = clock()
        self._last = self._started
        self._finished = False
        self._sent: tuple | None = None  # (done, extra) of the last line sent

    def advance(self, amount: int = 1, **extra: int) -> None:
        """`amount` more of the main unit; `extra` counts (events, chunks...) add up."""
        self.done += amount
        for name, value in extra.items():
            self.extra[name] = self.extra.get(name, 0) + value
        self._maybe_report()

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        self._maybe_report()

    def rate(self) -> float:
        elapsed = self._clock() - self._started
        return self.done / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        parts = [f"{self.done:,}/{self.total:,} {self.unit}" if self.total is not None
                 else f"{self.done:,} {self.unit}"]
        parts += [f"{value:,} {name}" for name, value in self.extra.items()]
        elapsed = self._clock() - self._started
        rate = self.rate()
        parts.append(f"{rate:,.0f} {self.unit}/s" if rate >= 10 else f"{rate:,.1f} {self.unit}/s")
        if self.total is not None and rate > 0 and self.done < self.total:
            parts.append(f"about {_clock((self.total - self.done) / rate)} left")
        elif self._finished or (self.total is not None and self.done >= self.total):
            parts.append(f"in {_clock(elapsed)}")
        return f"{self.what}: " + ", ".join(parts)

    def _maybe_report(self) -> None:
        now = self._clock()
        if now - self._last >= self._every:
            self._last = now
            self._send()

    def finish(self) -> str:
        """Report the final line, whatever the interval, unless the counts are those of the
        line last sent (the terminal shows the last line once, issue 22); returns it."""
        self._finished = True
        self._send(skip_repeat=True)
        return self.line()

    def _send(self, skip_repeat: bool = False) -> None:
        state = (self.done, tuple(sorted(self.extra.items())))
        if skip_repeat and state == self._sent:
            return
        self._sent = state
        line = self.line()
        if self._report is not None:
            self._report(line)
        emit(line)


Snapshot = dict[str, int]  # files, files_imported, events, turns, turns_with_vectors, ...


class Heartbeat:
    """A line every `every` seconds, whatever the work in progress does: `read()` counts
    what is done so far (files imported, events, turns and events with vectors, from the
    database), and the line says it with the rate and the time left of the phase under way
    (`phase`: "import", then "vectors"). `up` runs one beside its first import (`beating`)."""

    def __init__(self, read: Callable[[], Snapshot], say: Callable[[str], None], *,
                 every: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self._read, self._say, self._every, self._clock = read, say, every, clock
        self._started = clock()
        self.phase = "import"  # or "vectors": what the rate and the time left are of
        self._phase: tuple[str, float, int] | None = None  # (name, since, count then)

    def beat(self) -> str:
        """Read the counts and say the line (returned)."""
        try:
            line = self.line(self._read())
        except Exception as error:  # a beat must not end the import; the reason is said
            line = f"progress unavailable: {type(error).__name__}: {error}"
        self._say(line)
        return line

    def line(self, s: Snapshot) -> str:
        now = self._clock()
        name = self.phase
        importing = name == "import"
        done, total = ((s["events"], s["events_expected"]) if importing
                       else (s["with_vectors"], s["with_text"]))
        if self._phase is None or self._phase[0] != name:
            self._phase = (name, now, done)
        _, since, at_start = self._phase
        rate = (done - at_start) / (now - since) if now > since else 0.0
        parts = [f"{s['files_imported']:,}/{s['files']:,} files",
                 f"{s['events']:,} events",
                 f"{s['turns_with_vectors']:,}/{s['turns']:,} turns with vectors"]
        if not importing:
            parts.append(f"{s['with_vectors']:,}/{s['with_text']:,} events with vectors")
        unit = "events imported/s" if importing else "events embedded/s"
        parts.append(f"{rate:,.0f} {unit}" if rate >= 10 else f"{rate:,.1f} {unit}")
        left = max(total - done, 0)
        if left and rate > 0:
            parts.append(f"about {_clock(left / rate)} left")
        elif not left:
            parts.append(f"done in {_clock(now - self._started)}")
        return f"{name}: " + ", ".join(parts)

    def run(self, stop: threading.Event,
            wait: Callable[[float], bool] | None = None) -> None:
        """Beat at every multiple of `every` seconds since the start, until `stop` is set (a
        slow read does not stretch the interval)."""
        wait = wait or stop.wait
        beats = 0
        while True:
            beats += 1
            if wait(max(0.0, self._started + beats * self._every - self._clock())):
                return
            self.beat()


@contextmanager
def beating(read: Callable[[], Snapshot], say: Callable[[str], None],
            every: float = 5.0) -> Iterator[Heartbeat]:
    """A Heartbeat in a thread while the block runs; the last line once at the end."""
    heart = Heartbeat(read, say, every=every)
    stop = threading.Event()
    thread = threading.Thread(target=heart.run, args=(stop,), name="heartbeat", daemon=True)
    thread.start()
    try:
        yield heart
    finally:
        stop.set()
        thread.join(timeout=every + 5)
    heart.beat()
