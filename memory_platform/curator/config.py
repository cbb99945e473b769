"""What a curator run of one namespace works with: its ceiling, the retention window, the
budgets of the agent, the repository it is situated in, and the week it belongs to."""

import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from memory_platform.settings import Settings, load_settings
from memory_platform.vault.routing import Routing

# The design's rule, kept whatever the setting names: `personal` is weeded more gently.
BUILTIN_CEILINGS = {"personal": 0.25}


class RepoError(ValueError):
    """The repository a namespace is tied to cannot be used (the message says why)."""


@dataclass(frozen=True)
class CuratorConfig:
    ceiling: float = 0.40
    ceilings: dict[str, float] = field(default_factory=lambda: dict(BUILTIN_CEILINGS))
    retention_days: int = 14
    prompt_tokens: int = 24000
    max_turns: int = 30
    timeout_seconds: int = 900
    timezone: str = "UTC"
    repos: dict[str, Path] = field(default_factory=dict)
    routing_origin: str = "built-in default"

    @classmethod
    def load(cls, settings: Settings | None = None, routing: Routing | None = None
             ) -> "CuratorConfig":
        settings = settings or load_settings()
        routing = routing or Routing.load()
        return cls(
            ceiling=settings.curator_ceiling,
            ceilings={**BUILTIN_CEILINGS, **settings.curator_ceilings},
            retention_days=settings.curator_retention_days,
            prompt_tokens=settings.curator_prompt_tokens,
            max_turns=settings.curator_max_turns,
            timeout_seconds=settings.curator_timeout_seconds,
            timezone=settings.timezone,
            repos=dict(routing.repos),
            routing_origin=routing.origin,
        )

    def ceiling_for(self, namespace: str) -> float:
        return self.ceilings.get(namespace, self.ceiling)

    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    def repo_for(self, namespace: str) -> Path | None:
        """The repository `namespace` is tied to, checked to be a git work tree; None for a
        namespace curated on its memories alone. Raises RepoError for a tie that cannot
        work (a moved folder must not silently downgrade the run to memories-only)."""
        folder = self.repos.get(namespace)
        if folder is None:
            return None
        if not folder.is_dir():
            raise RepoError(f"namespace {namespace!r} is tied to {folder} ({self.routing_origin}),"
                            f" which is not a folder")
        try:
            top = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RepoError(f"cannot run git in {folder}: {exc}") from exc
        if top.returncode != 0:
            raise RepoError(f"namespace {namespace!r} is tied to {folder}, which is not a git "
                            f"repository: {top.stderr.strip()}")
        return folder.resolve()


def week_of(moment: datetime, timezone: str) -> date:
    """The first day (a Sunday, local time) of the week holding `moment`: the key of the
    curator's week partition for a run at that moment."""
    local = moment.astimezone(ZoneInfo(timezone)).date()
    return local - timedelta(days=(local.weekday() + 1) % 7)


def parse_week(key: str) -> date:
    try:
        day = date.fromisoformat(key)
    except ValueError:
        raise ValueError(f"{key!r} is not a week key like 2026-03-01") from None
    if day.weekday() != 6:
        raise ValueError(f"week {key} does not start on a Sunday")
    return day
