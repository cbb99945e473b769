"""Settings from the environment, read once per call (never at import time)."""

import os
from dataclasses import dataclass
from pathlib import Path

# Daily partitions start here. ChatGPT launched 2022-11-30; earlier events still import
# through the CLI, they just fall outside the Dagster partition range.
DEFAULT_HISTORY_START = "2022-01-01"


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str | None  # None: the embedded PostgreSQL under `home`
    claude_projects: Path  # Claude Code transcripts, watched by the sensor
    inbox: Path  # drop exports here; the sensor imports them
    notes: Path | None  # optional folder of markdown notes, watched too

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def demo(self) -> Path:
        return self.home / "demo"

    def watched_folders(self) -> list[tuple[str | None, Path]]:
        """(kind, folder) pairs the sensor and the catalog scan look at. kind None means
        'detect from content' (the inbox takes any export)."""
        folders: list[tuple[str | None, Path]] = [
            ("claude-code", self.claude_projects),
            (None, self.inbox),
        ]
        if self.notes is not None:
            folders.append(("notes", self.notes))
        if self.demo.exists():  # written by `memory-platform up` on a machine with no history
            folders.append((None, self.demo))
        return folders


def load_settings() -> Settings:
    home = Path(os.environ.get("MEMORY_PLATFORM_HOME", "~/.memory-platform")).expanduser()
    notes = os.environ.get("MEMORY_PLATFORM_NOTES")
    return Settings(
        home=home,
        database_url=os.environ.get("MEMORY_PLATFORM_DATABASE_URL") or None,
        claude_projects=Path(
            os.environ.get("MEMORY_PLATFORM_CLAUDE_PROJECTS", "~/.claude/projects")
        ).expanduser(),
        inbox=Path(os.environ.get("MEMORY_PLATFORM_INBOX", str(home / "inbox"))).expanduser(),
        notes=Path(notes).expanduser() if notes else None,
    )


def history_start() -> str:
    return os.environ.get("MEMORY_PLATFORM_HISTORY_START", DEFAULT_HISTORY_START)
