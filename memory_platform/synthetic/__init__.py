"""Synthetic AI chat histories written in the real on-disk export formats.

Two entry points:

- `generate_history(root, events, seed=...)`: a large, deterministic, randomly assembled
  history (load tests, search benchmarks). Files are streamed conversation by conversation,
  so a million events never sit in memory at once.
- `generate_demo(root)`: a small hand-written history (two projects, a decision, a bug fix,
  some preferences) anchored on today's date, for a first run.

Layout under `root` (each tree is what the real tool or export puts on disk):

    claude-code/projects/<encoded cwd>/<sessionId>.jsonl
    claude-code/projects/<encoded cwd>/<sessionId>/subagents/agent-<agentId>.jsonl
    claude-ai/conversations.json, claude-ai/projects.json
    chatgpt/conversations.json
    gemini/Takeout/My Activity/Gemini Apps/MyActivity.json
    notes/<date>-<slug>.md

Record shapes follow ../shared/formats/FORMATS.md sections 1-4 and the samples beside it.
Event accounting (what the manifest counts, and what the importers store):
one JSONL line (Claude Code, meta lines included), one claude.ai chat message or
projects.json entry, one ChatGPT mapping node that has a message, two per Gemini
"Prompted" row (prompt + response) and one per other Gemini row, and for notes one per
top-level section when a file has two or more, else one per file.

Modules, bottom up (each imports only the ones above it):

- `common`: seeded ids, the clock that formats each source's timestamps, fitting a unit into
  the time window, streamed file writers, the manifest.
- `languages`, `vocabulary`: the word tables (per programming language; projects, features,
  people, models).
- `talk`, `chat_talk`: developer chatter assembled from those tables, one coherent topic at
  a time (`ChatTalk` adds what chat apps are asked).
- one writer per format: `claude_code_session` + `claude_code`, `claude_ai`, `chatgpt`,
  `gemini`, `notes` (record shapes, and the random conversations in them).
- `history`: `generate_history`, which splits the event budget over the writers.
- `demo_files`, `demo_claude_code`, `demo_chats`, `demo`: the hand-written first-run story.
- `demo_repo`, `demo_vault`: the demo's bookminder git repository and the demo vault's
  memories (seeded by vault/demo.py), for the weekly curator's first run.

Byte-for-byte output for a given seed is pinned by tests/test_synthetic.py.
"""

from memory_platform.synthetic.demo import generate_demo
from memory_platform.synthetic.history import generate_history

__all__ = ["generate_demo", "generate_history"]
