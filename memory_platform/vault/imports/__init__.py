"""Memories kept by other tools, brought into the vault for review: a mem0 store (its
`get_all` export JSON, or its history table: the SQLite `history.db` or the rows as JSON),
Claude Code's own memory files (`CLAUDE.md`, `CLAUDE.local.md`, `.claude/rules/*.md` and
the per-project auto-memory folder `~/.claude/projects/<project>/memory/`) and a
basic-memory or Obsidian-style folder of markdown notes.

    records = mem0.read(path)                     # parsers: Record or Problem, nothing else
    result = service.stage(db, records, "work", actor="cli:alice")

Rules kept (service.py): every record becomes a suggestion in `<ns>__ideas` (source
`import`, review pending) through the vault's one write path for suggestions,
`vault.service.add_idea`, so it passes the dedup gate every entry to review passes and the
vault's text rules (no credentials, at most 4,000 characters, no NUL); never a primary
namespace. Its provenance (the tool, the file and line or row, the record's id in that
tool) is the entry's `why`, which the review queue shows. A re-run stages nothing twice:
the same text already in the primary namespace or its ideas is "known", a near-identical
one is the gate's duplicate. A bad record costs only itself and is reported with its file
and line.

Files are read by files.py: regular files only, opened without following a symlink, a
symlink or a non-regular file in a folder refused and reported, sizes capped, NUL refused.

May import: the vault (service, memories), store, query (the embedder), llm (the gate's judge),
progress. Never a face, never Dagster.
"""
