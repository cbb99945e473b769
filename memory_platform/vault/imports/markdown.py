"""Markdown memories: Claude Code's memory files and a basic-memory or Obsidian-style folder
of notes, split into statements (one memory each).

A statement is a top-level list item (with the items and lines nested under it), or a
paragraph; a fenced code block belongs to the statement right before it (a command under
"Run the tests with:"), else stands alone. Headings, rules, HTML comments and front matter
are structure, not memories. Line numbers are the file's (1-based), for the provenance.

- Claude Code (`read_claude`): `CLAUDE.md`, `CLAUDE.local.md`, `.claude/CLAUDE.md`,
  `.claude/rules/**/*.md` of a project; `~/.claude/CLAUDE.md`, `~/.claude/rules/**/*.md`
  and the auto-memory folders `~/.claude/projects/<project>/memory/` of the user; or one
  project's folder there, or a memory folder itself (it holds `MEMORY.md`). An auto-memory
  topic file (front matter `name`/`description`/`type`) is one fact: its body is one
  memory, its `type` (user, feedback, project, reference: the vault's own categories) the
  category. A `MEMORY.md` line linking to a topic file that is imported is an index entry,
  noted, not imported twice; `@path` import lines are noted and not followed.
- A notes folder (`read_folder`): every `*.md` / `*.markdown` below it, dot-folders
  (`.obsidian`, `.git`, `.trash`) left out. basic-memory's observations
  (`- [category] text`) and relations (`- relates_to [[Other]]`) are about the note's
  entity, so they are stated with its title ("Coffee Brewing: pour over ..."); Obsidian
  wikilinks become their text.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memory_platform.vault.imports import files
from memory_platform.vault.imports.records import Note, Problem, Record

MAX_NOTE_BYTES = 1 << 20  # a memory file of 1 MiB is already a book
SUFFIXES = (".md", ".markdown")
CATEGORIES = ("user", "feedback", "project", "reference")  # auto memory's types
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s+(.*?))?\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(\s*\1){2,}\s*$")
_IMPORT = re.compile(r"^@\S+$")
_OBSERVATION = re.compile(r"^\[([^\]\sxX][^\]]*)\]\s+(\S.*)$")
_RELATION = re.compile(r"^([A-Za-z_][\w-]*)\s+\[\[([^\]|]+)(?:\|[^\]]*)?\]\]\s*(\(.*\))?$")
_WIKILINK = re.compile(r"\[\[([^\]|]+)(?:\|([^\]]+))?\]\]")
_INDEX_LINK = re.compile(r"^\[[^\]]+\]\(([^)\s]+)\)")


@dataclass
class _Block:
    line: int
    lines: list[str]
    item: bool
    indent: int = 0
    section: int = 0
    extra: list[str] = field(default_factory=list)  # a fenced block attached to it

    def text(self) -> str:
        body = list(self.lines)
        if self.item:
            match = _ITEM.match(body[0])
            body[0] = match.group(3) if match else body[0]
        return "\n".join([*(ln.rstrip() for ln in body), *self.extra]).strip()


def _lines(text: str) -> list[str]:
    return [line.rstrip("\r") for line in text.split("\n")]


def front_matter(lines: list[str], label: str) -> tuple[dict[str, Any], int, Problem | None]:
    """(front matter, index of the first body line, the problem with it or None)."""
    if not lines or lines[0].strip() != "---":
        return {}, 0, None
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        return {}, 0, None
    try:
        loaded = yaml.load("\n".join(lines[1:end]), Loader=_YAML_LOADER)
    except (yaml.YAMLError, RecursionError) as exc:  # RecursionError: nesting past the stack
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        return {}, end + 1, Problem(label, line, "invalid YAML front matter; read without it")
    return (loaded if isinstance(loaded, dict) else {}), end + 1, None


def _blocks(lines: list[str], start: int) -> list[_Block | tuple[int, str]]:
    """The statements of lines[start:], and (line, heading) for each heading, in order."""
    out: list[_Block | tuple[int, str]] = []
    current: _Block | None = None
    last: _Block | None = None  # the block before the current gap, for a fence after ':'
    fence: tuple[str, list[str], int] | None = None
    in_comment, section = False, 0

    def flush() -> None:
        nonlocal current, last
        if current is not None:
            out.append(current)
            last = current
        current = None

    for number, line in enumerate(lines[start:], start + 1):
        stripped = line.strip()
        if fence is not None:
            marker, body, opened = fence
            body.append(line)
            if stripped.startswith(marker) and not stripped.strip(marker[0]):
                owner = current or (last if last and last.section == section
                                    and last.text().endswith(":") else None)
                if owner is not None:
                    owner.extra.extend(body)
                else:
                    out.append(_Block(opened, body, item=False, section=section))
                fence = None
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = (opening.group(1), [line], number)
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped[4:]
            continue
        heading = _HEADING.match(line) if not _RULE.match(line) else None
        if not stripped or heading or _RULE.match(line):
            flush()
            if heading:
                section += 1
                last = None
                out.append((number, heading.group(2) or ""))
            continue
        item = _ITEM.match(line)
        if item and (current is None or not current.item
                     or len(item.group(1)) <= current.indent):
            flush()
            current = _Block(number, [line], item=True, indent=len(item.group(1)),
                             section=section)
            continue
        if current is None:
            current = _Block(number, [line], item=False, section=section)
        else:
            current.lines.append(line)
    if fence is not None:  # an unclosed fence runs to the end of the file
        flush()
        out.append(_Block(fence[2], fence[1], item=False, section=section))
    flush()
    return out


def _plain(text: str) -> str:
    return _WIKILINK.sub(lambda m: m.group(2) or m.group(1), text)


def split(text: str, label: str, tool: str, *, title: str | None = None,
          index_targets: frozenset[str] = frozenset(), start: int = 0,
          category: str | None = None) -> Iterator[Record | Note]:
    """The statements of a markdown text (from line index `start`) as Records. `title`: the
    entity basic-memory observations and relations are about."""
    lines = _lines(text)
    for block in _blocks(lines, start):
        if isinstance(block, tuple):
            continue
        statement = block.text()
        if not statement:
            continue
        if tool == "claude-code" and _IMPORT.match(statement):
            yield Note(label, block.line, "not followed: an @import line (import that file "
                                          "by its own path)")
            continue
        link = _INDEX_LINK.match(statement) if block.item else None
        if link and Path(link.group(1)).name in index_targets:
            yield Note(label, block.line, f"index entry of {Path(link.group(1)).name}, "
                                          f"imported from that file")
            continue
        if block.item and title:
            observed, related = _OBSERVATION.match(statement), _RELATION.match(statement)
            if observed:
                statement = f"{title}: {observed.group(2)}"
            elif related:
                context = f" {related.group(3)}" if related.group(3) else ""
                statement = (f"{title} {related.group(1).replace('_', ' ')} "
                             f"{related.group(2)}{context}")
        yield Record(_plain(statement), label, block.line, tool, category=category)


def _note_title(front: dict, lines: list[str], start: int, path: Path) -> str:
    title = front.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    for line in lines[start:]:
        heading = _HEADING.match(line)
        if heading and line.lstrip().startswith("# ") and heading.group(2):
            return heading.group(2)
    return path.stem


def _topic(front: dict, text: str, label: str, start: int,
           lines: list[str]) -> Iterator[Record | Note]:
    """An auto-memory topic file: one fact (its body), its type the category."""
    kind = front.get("type")
    meta = front.get("metadata")
    if kind is None and isinstance(meta, dict):
        kind = meta.get("type")
    category = kind if isinstance(kind, str) and kind in CATEGORIES else None
    body_lines = lines[start:]
    first = next((i for i, line in enumerate(body_lines) if line.strip()), None)
    body = "\n".join(body_lines).strip()
    if not body:
        description = front.get("description")
        if isinstance(description, str) and description.strip():
            yield Record(description.strip(), label, 2, "claude-code", category=category)
        return
    yield Record(_plain(body), label, start + (first or 0) + 1, "claude-code",
                 category=category)


def _memory_file(found: files.Found, tool: str, *, index_targets: frozenset[str] = frozenset(),
                 topic: bool = False) -> Iterator[Record | Problem | Note]:
    label = str(found.path)
    text, problem = files.decode(found)
    if problem is not None:
        yield problem
        return
    assert text is not None
    lines = _lines(text)
    front, start, problem = front_matter(lines, label)
    if problem is not None:
        yield problem
    if topic and (front.get("name") or front.get("description") or front.get("type")
                  or front.get("metadata")):
        yield from _topic(front, text, label, start, lines)
        return
    title = _note_title(front, lines, start, found.path) if tool == "markdown" else None
    yield from split(text, label, tool, title=title, index_targets=index_targets, start=start)


def _is_markdown(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)


def read_folder(root: Path) -> Iterator[Record | Problem | Note]:
    """A basic-memory or Obsidian-style folder of notes (or one note)."""
    root = root.absolute()
    if root.is_file():
        yield from _memory_file(files.Found(root, files.read_named(root, MAX_NOTE_BYTES)),
                                "markdown")
        return
    for found in files.walk(root, MAX_NOTE_BYTES, wanted=lambda rel: _is_markdown(rel[-1]),
                            descend=lambda rel: not rel[-1].startswith(".")):
        if isinstance(found, files.Found):
            yield from _memory_file(found, "markdown")
        else:
            yield found


_PROJECT_FILES = {("CLAUDE.md",), ("CLAUDE.local.md",), (".claude", "CLAUDE.md")}


def _claude_rules(memory_folder: bool):
    def in_memory_folder(rel: tuple[str, ...]) -> bool:
        return ((len(rel) == 4 and rel[0] == "projects" and rel[2] == "memory")
                or (len(rel) == 2 and rel[0] == "memory") or (len(rel) == 1 and memory_folder))

    def wanted(rel: tuple[str, ...]) -> bool:
        return _is_markdown(rel[-1]) and (
            rel in _PROJECT_FILES or rel[:2] == (".claude", "rules") or rel[0] == "rules"
            or in_memory_folder(rel))

    def descend(rel: tuple[str, ...]) -> bool:
        return (rel in {(".claude",), ("rules",), ("projects",), ("memory",)}
                or rel[:2] == (".claude", "rules") or (rel[0] == "rules" and len(rel) > 1)
                or (rel[0] == "projects" and (len(rel) == 2 or rel[2:] == ("memory",))))

    return wanted, descend, in_memory_folder


def read_claude(root: Path) -> Iterator[Record | Problem | Note]:
    """Claude Code's memory files under `root` (see the module docstring), or one file."""
    root = root.absolute()
    if root.is_file():
        found = files.Found(root, files.read_named(root, MAX_NOTE_BYTES))
        yield from _memory_file(found, "claude-code", topic=root.parent.name == "memory")
        return
    memory_folder = (root / "MEMORY.md").is_file()
    wanted, descend, in_memory_folder = _claude_rules(memory_folder)
    found_files = list(files.walk(root, MAX_NOTE_BYTES, wanted, descend))
    # Topic files by folder, so MEMORY.md's index entries pointing at them are not twice.
    topics: dict[Path, set[str]] = {}
    for found in found_files:
        if isinstance(found, files.Found) and found.path.name != "MEMORY.md":
            topics.setdefault(found.path.parent, set()).add(found.path.name)
    for found in found_files:
        if not isinstance(found, files.Found):
            yield found
            continue
        rel = found.path.relative_to(root).parts
        if not in_memory_folder(rel):
            yield from _memory_file(found, "claude-code")
        elif found.path.name == "MEMORY.md":
            targets = frozenset(topics.get(found.path.parent, ()))
            yield from _memory_file(found, "claude-code", index_targets=targets)
        else:
            yield from _memory_file(found, "claude-code", topic=True)
