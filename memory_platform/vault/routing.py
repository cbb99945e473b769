"""Which vault namespace a conversation's memories are proposed for.

Rules come from a TOML file (MEMORY_PLATFORM_ROUTING, default $MEMORY_PLATFORM_HOME/routing.toml);
the first matching rule wins, else `default` (itself "personal" unless the file says so):

    default = "personal"

    [[rules]]
    project = "/home/me/src/acme-*"   # glob on the conversation's project path (cwd)
    namespace = "acme"

    [[rules]]
    source = "chatgpt"                # claude-code, claude-ai, chatgpt, gemini, notes, codex
    namespace = "personal"

A rule with both `project` and `source` needs both to match. Routing is code, not the
model's choice: a dream cannot talk its way into another namespace.

The same file ties a namespace to the project repository its memories describe, so the
weekly curator runs situated in it (reading the code and its git history):

    [repos]
    acme = "/home/me/src/acme"        # absolute, `~/...`, or relative to this file
"""

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from memory_platform.settings import load_settings

DEFAULT_NAMESPACE = "personal"
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class RoutingError(ValueError):
    """The routing file is unreadable or names an invalid namespace (says which rule)."""


@dataclass(frozen=True)
class Rule:
    namespace: str
    project: str | None = None
    source: str | None = None

    def matches(self, *, project: str | None, source: str | None) -> bool:
        if self.project is not None and (
            project is None or not fnmatch.fnmatchcase(project, self.project)
        ):
            return False
        return self.source is None or self.source == source


@dataclass(frozen=True)
class Routing:
    default: str = DEFAULT_NAMESPACE
    rules: tuple[Rule, ...] = field(default_factory=tuple)
    origin: str = "built-in default"
    # namespace -> the repository its memories describe (the curator's working directory)
    repos: dict[str, Path] = field(default_factory=dict)

    def route(self, *, project: str | None, source: str | None) -> str:
        for rule in self.rules:
            if rule.matches(project=project, source=source):
                return rule.namespace
        return self.default

    @classmethod
    def load(cls, path: Path | None = None) -> "Routing":
        if path is None:
            settings = load_settings()
            path = settings.routing_file
            if settings.routing is None and not path.exists():
                return cls()  # no rules written yet: everything goes to the default
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise RoutingError(f"routing file {path}: {exc}") from exc
        default = _namespace(data.get("default", DEFAULT_NAMESPACE), f"{path}: default")
        rules = []
        for i, raw in enumerate(data.get("rules", []), 1):
            where = f"{path}: rule {i}"
            if not isinstance(raw, dict) or "namespace" not in raw:
                raise RoutingError(f"{where}: needs a namespace")
            unknown = set(raw) - {"namespace", "project", "source"}
            if unknown:
                raise RoutingError(f"{where}: unknown keys {sorted(unknown)}")
            if "project" not in raw and "source" not in raw:
                raise RoutingError(f"{where}: needs `project` or `source` to match on")
            rules.append(Rule(_namespace(raw["namespace"], where), raw.get("project"),
                              raw.get("source")))
        repos = data.get("repos", {})
        if not isinstance(repos, dict):
            raise RoutingError(f"{path}: [repos] must be a table of namespace = \"path\"")
        tied = {}
        for name, folder in repos.items():
            where = f"{path}: repos.{name}"
            if not isinstance(folder, str) or not folder.strip():
                raise RoutingError(f"{where}: needs a repository path")
            folder_path = Path(folder).expanduser()
            if not folder_path.is_absolute():
                folder_path = path.parent / folder_path
            tied[_namespace(name, where)] = folder_path
        return cls(default, tuple(rules), str(path), tied)


def _namespace(value, where: str) -> str:
    if not isinstance(value, str) or not _NAMESPACE.match(value) or "__" in value:
        raise RoutingError(
            f"{where}: {value!r} is not a primary namespace name (lowercase letters, digits, "
            "., _, -; no '__', which marks shadow namespaces)"
        )
    return value
