"""claude.ai account export: `conversations.json` (+ `projects.json`), loose or in the zip.

One Event per chat message (all branches kept), native id `<conversation uuid>/<message
uuid>` because message ids are only trustworthy inside a conversation. Projects become
`kind="meta"` events without a conversation. Format notes: FORMATS.md section 2.

Here: `messages` reads one message's text, `records` turns a conversation or project record
into items; this module finds and streams the files.
"""

import zipfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from memory_platform.adapters._json_stream import (
    OPEN_ERRORS,
    Opener,
    basename,
    first_record_keys,
    foreign_message,
    is_zip,
    member_label,
    one_line,
    open_zip,
    peek_start,
    stream_array,
)
from memory_platform.adapters.base import Item, Listing, ParseIssue, ZipArchive, discover_files
from memory_platform.adapters.claude_ai.records import conversation_items, project_items
from memory_platform.confined import open_file

CONVERSATIONS = "conversations.json"
PROJECTS = "projects.json"
_SNIFF_STOP = frozenset({"chat_messages", "mapping", "safeHtmlItem"})

# describe_format() guesses each file kind accepts as its own (a projects.json record without
# prompt_template but with docs is still a project)
_CONV_OWN = frozenset({"claude.ai"})
_PROJ_OWN = frozenset({"claude.ai projects.json"})


def _looks_like_claude(opener: Opener) -> bool:
    """Folder scans meet ChatGPT's identically named conversations.json; tell them apart by
    the first record's keys without loading it."""
    try:
        with opener() as raw:
            first, stream = peek_start(raw)
            if first != b"[":
                return False
            keys = first_record_keys(stream, "item", _SNIFF_STOP)
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError):
        return False
    if keys is None:  # empty array: nothing to import, claiming it is harmless
        return True
    return "chat_messages" in keys or ("uuid" in keys and not keys & _SNIFF_STOP)


def _file_is_claude(path: Path) -> bool:
    return _looks_like_claude(lambda: open_file(path))


def _beside_claude_conversations(projects: Path) -> bool:
    """projects.json carries no marker of its own; it is claude.ai's when the
    conversations.json beside it is."""
    conversations = projects.with_name(CONVERSATIONS)
    return conversations.is_file() and _file_is_claude(conversations)


def _zip_is_claude(path: Path) -> bool:
    try:
        with ZipArchive(path) as archive:
            for member in archive.namelist():
                if basename(member) == CONVERSATIONS:
                    return _looks_like_claude(lambda m=member: archive.open(m))
    except (OSError, zipfile.BadZipFile):
        return False
    return False


class ClaudeAiAdapter:
    source = "claude-ai"

    def discover(self, path: Path) -> Listing:
        return discover_files(
            path,
            {
                CONVERSATIONS: _file_is_claude,
                PROJECTS: _beside_claude_conversations,
                "*.zip": _zip_is_claude,
            },
        )

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        label = str(path)
        if is_zip(path):
            yield from self._parse_zip(path)
        elif path.name == PROJECTS:
            yield from self._parse_projects(lambda: open_file(path), label)
        else:
            yield from self._parse_conversations(lambda: open_file(path), label)

    def _parse_zip(self, path: Path) -> Iterator[Item]:
        archive = open_zip(path)
        if isinstance(archive, ParseIssue):
            yield archive
            return
        with archive:
            names = archive.namelist()
            conversations = sorted(n for n in names if basename(n) == CONVERSATIONS)
            projects = sorted(n for n in names if basename(n) == PROJECTS)
            if not conversations and not projects:
                yield ParseIssue(
                    str(path), None, None, "zip holds no conversations.json or projects.json"
                )
                return
            for member in conversations + projects:
                label = member_label(path, member)
                opener = partial(archive.open, member)
                try:
                    if basename(member) == PROJECTS:
                        yield from self._parse_projects(opener, label)
                    else:
                        yield from self._parse_conversations(opener, label)
                except OPEN_ERRORS as error:
                    yield ParseIssue(
                        label, None, None, f"cannot read zip member: {one_line(error)}"
                    )

    def _parse_conversations(self, opener: Opener, label: str) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "claude.ai export", {"chat_messages": ""},
            lambda r: foreign_message(r, "chat_messages", "claude.ai export", _CONV_OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            try:
                # one conversation at a time, yielded whole so a bug cannot leave it half done
                items = list(conversation_items(record, index, label))
            except Exception as error:  # noqa: BLE001 - one odd record must not stop the file
                rid = record.get("uuid") if isinstance(record, dict) else None
                yield ParseIssue(
                    label, index, rid if isinstance(rid, str) else None,
                    f"record {index}: could not be parsed ({type(error).__name__}: "
                    f"{one_line(error)})",
                )
                continue
            yield from items

    def _parse_projects(self, opener: Opener, label: str) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "claude.ai projects.json", {"prompt_template": ""},
            lambda r: foreign_message(r, "prompt_template", "claude.ai projects.json", _PROJ_OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            yield from project_items(record, index, label)


adapter = ClaudeAiAdapter()
