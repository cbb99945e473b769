"""What the parsers of other memory stores yield: a `Record` (one memory to stage, with where
it came from) or a `Problem` (a record or file that could not be read, with its file and
line). Nothing else: a parser never writes, and never drops a bad record silently."""

from dataclasses import dataclass

TOOLS = ("mem0", "claude-code", "markdown")


@dataclass(frozen=True)
class Record:
    """One memory from another tool. `line` is the 1-based line of the file the record
    starts on; `where` replaces "line N" for records that have no line (a history row)."""

    text: str
    file: str
    line: int | None
    tool: str
    native_id: str | None = None
    category: str | None = None
    where: str | None = None

    def location(self) -> str:
        if self.where is not None:
            return f"{self.file} ({self.where})"
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def provenance(self) -> str:
        """The entry's `why`: what the reviewer reads under the text."""
        ident = f", {self.tool} id {self.native_id}" if self.native_id else ""
        return f"imported from {self.tool}: {self.location()}{ident}"


@dataclass(frozen=True)
class Problem:
    """A record (or a whole file) that was not imported, and why."""

    file: str
    line: int | None
    message: str
    where: str | None = None

    def __str__(self) -> str:
        if self.where is not None:
            return f"{self.file} ({self.where}): {self.message}"
        at = f":{self.line}" if self.line is not None else ""
        return f"{self.file}{at}: {self.message}"


@dataclass(frozen=True)
class Note:
    """Something read on purpose and not imported (an `@path` import line of a CLAUDE.md,
    an index line of MEMORY.md pointing at a topic file that is imported itself): counted
    and shown, not an error."""

    file: str
    line: int | None
    message: str

    def __str__(self) -> str:
        at = f":{self.line}" if self.line is not None else ""
        return f"{self.file}{at}: {self.message}"
