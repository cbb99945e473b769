"""The demo's chat apps and notes: claude.ai, ChatGPT and Gemini conversations and notes
that echo the Claude Code story (and a few everyday requests).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_platform.synthetic.chatgpt import ChatGPTConversation
from memory_platform.synthetic.claude_ai import ACCOUNT_UUID, ROOT_PARENT, ClaudeAIConversation
from memory_platform.synthetic.common import (
    ArrayWriter,
    Clock,
    FileSink,
    hex_id,
    json_line,
    random_uuid,
)
from memory_platform.synthetic.gemini import GEMINI_DIR, feedback_row, gemini_dump, gemini_row
from memory_platform.synthetic.notes import note_text, slugify


def demo_claude_ai(
    root: Path, rng: random.Random, clk: Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs: list[dict[str, Any]] = []

    c = ClaudeAIConversation(rng, clk, at(10, "20:15"))
    h = c.human("I'm adding search over book highlights to bookminder (FastAPI, SQLite locally, "
                "Postgres in production). SQLite FTS5 or Postgres full-text search?",
                ROOT_PARENT, gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Both work; the deciding question is **how many writers** you have.\n\n"
                "- **SQLite FTS5**: zero setup, great ranking (bm25), fast for one process. But "
                "SQLite has a single writer: an importer and an API writing at once will see "
                "`database is locked`.\n- **PostgreSQL tsvector + GIN**: a bit more setup, "
                "handles concurrent writers, and it's what production runs anyway.\n\nIf the "
                "importer runs while people use the app, I'd start on Postgres.", h)
    c.assistant("Short answer: FTS5 for a prototype, Postgres `tsvector` once anything writes "
                "concurrently. FTS5's weak spot is SQLite's single writer.", h,
                gap=(30.0, 60.0))  # fmt: skip  # a retry: two answers to the same prompt
    h2 = c.human("I'll start with FTS5 since it's zero setup. Can you sketch the FTS5 schema "
                 "with triggers?", c.messages[-1]["uuid"])  # fmt: skip
    c.assistant("Here's an external-content FTS5 table kept in sync by triggers.\n\nInserts "
                "are covered by `highlights_ai`; add matching `_ad`/`_au` triggers for deletes "
                "and updates.", h2,
                artifact=("highlights FTS5 schema", "sql",
                          "CREATE VIRTUAL TABLE highlights_fts USING fts5(\n  text, note,\n  "
                          "content='highlights', content_rowid='id'\n);\n\nCREATE TRIGGER "
                          "highlights_ai AFTER INSERT ON highlights BEGIN\n  INSERT INTO "
                          "highlights_fts(rowid, text, note)\n  VALUES (new.id, new.text, "
                          "new.note);\nEND;"))  # fmt: skip
    convs.append(c.export(random_uuid(rng), "Search backend for bookminder", ACCOUNT_UUID,
                          "FTS5 vs Postgres full-text search for highlights."))  # fmt: skip

    c = ClaudeAIConversation(rng, clk, at(5, "19:40"))
    h = c.human("I'm vegetarian and I really don't like cilantro. Give me a meal-prep plan for "
                "4 workday lunches, high protein, about 30 g per lunch.", ROOT_PARENT,
                gap=(0.0, 0.0))  # fmt: skip
    a = c.assistant("Four lunches, ~30 g protein each, no cilantro anywhere:\n\n1. **Lentil & "
                    "feta salad** — green lentils, roasted peppers, feta, lemon (31 g)\n2. "
                    "**Tofu peanut noodles** — baked tofu, soba, edamame (33 g)\n3. **Chickpea "
                    "shakshuka** with eggs, parsley instead of cilantro (29 g)\n4. **Tempeh "
                    "grain bowl** — farro, tempeh, roasted broccoli, tahini (32 g)\n\nPrep on "
                    "Sunday: cook lentils and farro, bake tofu and tempeh, roast the veg.", h)
    h = c.human("swap the tofu one, I had tofu all week", a)
    c.assistant("Swap #2 for **white bean & halloumi traybake** — butter beans, halloumi, "
                "cherry tomatoes, spinach (30 g). Same Sunday prep slot, 35 minutes in the "
                "oven.", h)  # fmt: skip
    convs.append(c.export(random_uuid(rng), "Vegetarian meal prep", ACCOUNT_UUID))

    c = ClaudeAIConversation(rng, clk, at(3, "13:00"))
    h = c.human("How would you explain Rust's E0502 to a junior dev? I hit it in tidepool's "
                "cache eviction loop this week.", ROOT_PARENT, gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Think of a borrow as a library card. `iter()` checks the map out for "
                "*reading* for as long as the loop runs. `remove()` wants to check the same map "
                "out for *writing*. The library (the compiler) refuses to hand out a write card "
                "while a read card is out — that's E0502.\n\nThe fix is to ask for one write "
                "card that does both jobs: `map.retain(|_, v| keep(v))`.", h,
                thinking="The user wants a teaching explanation, not a fix. An analogy plus the "
                "retain() idiom they already used should land well.")  # fmt: skip
    convs.append(c.export(random_uuid(rng), "Explaining E0502", ACCOUNT_UUID))

    out = ArrayWriter(root / "claude-ai" / "conversations.json")
    for conv in convs:
        out.add(json_line(conv))
    out.close()
    t = at(10, "19:58")
    project = {
        "uuid": random_uuid(rng),
        "name": "Bookminder",
        "description": "Reading highlights app: FastAPI + PostgreSQL.",
        "is_private": True,
        "is_starter_project": False,
        "prompt_template": "You are helping Dana with bookminder. Dana prefers small PRs, ruff "
        "with line length 100, and tests against a real Postgres (port 5433), never mocks.",
        "created_at": clk.us(t, "+00:00"),
        "updated_at": clk.us(t + 420.5, "+00:00"),
        "creator": {"uuid": ACCOUNT_UUID, "full_name": "Dana Ruiz"},
        "docs": [
            {
                "uuid": random_uuid(rng),
                "filename": "architecture.md",
                "content": "# bookminder\n\n- FastAPI app in src/bookminder\n- PostgreSQL in "
                "production, port 5433 locally\n- Kindle clippings importer runs hourly\n",
                "created_at": clk.us(t, "+00:00"),
            }
        ],
    }
    proj_out = ArrayWriter(root / "claude-ai" / "projects.json")
    proj_out.add(json.dumps(project, ensure_ascii=False))
    proj_out.close()
    return sum(len(cv["chat_messages"]) for cv in convs) + 1, 2


def demo_chatgpt(
    root: Path, rng: random.Random, clk: Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs = []
    c = ChatGPTConversation(rng, clk, at(8, "21:30"), "gpt-4o")
    c.system()
    c.user("For searching book titles and highlights in Postgres: tsvector or pg_trgm?",
           gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Use both, for different jobs:\n\n- **tsvector + GIN** for words and phrases "
                "in highlight text: stemming (\"running\" finds \"run\"), ranking with "
                "`ts_rank_cd`, `websearch_to_tsquery` for user input.\n- **pg_trgm** for short "
                "fields where typos matter, like titles and author names (`similarity()`, "
                "`%` operator with a GIN trigram index).")  # fmt: skip
    u = c.user("what about typos like 'Dostoyevsky' vs 'Dostoevsky'?")
    c.assistant("That's pg_trgm territory: `similarity('Dostoyevsky', 'Dostoevsky')` is about "
                "0.6, well above the default 0.3 threshold. tsvector would treat them as "
                "different words.")  # fmt: skip
    c.assistant("tsvector won't help with spelling variants. Add a trigram index on "
                "`authors.name` and query with `name % :q ORDER BY similarity(name, :q) DESC`.",
                parent=u, gap=(20.0, 40.0))  # fmt: skip  # regenerated answer, now current
    convs.append(c.export("tsvector vs pg_trgm"))

    c = ChatGPTConversation(rng, clk, at(6, "08:10"), "gpt-4o")
    c.user("Tide prediction from harmonic constants: write the formula and compute the M2 "
           "contribution at t = 3 h for amplitude 0.58 m, phase 190°.", gap=(0.0, 0.0))
    height = 0.58 * math.cos(math.radians(28.984104 * 3.0 - 190.0))
    c.code_run("import math\nA, phase, speed = 0.58, 190.0, 28.984104  # M2 speed in °/h\n"
               "t = 3.0\nround(A * math.cos(math.radians(speed * t - phase)), 3)",
               f"{height:.3f}")  # fmt: skip
    c.assistant("Each constituent contributes h(t) = A·cos(ω·t − φ); the prediction is the "
                "mean sea level plus the sum over constituents.\n\nFor M2 (ω = 28.984104 °/h, "
                f"A = 0.58 m, φ = 190°) at t = 3 h: **{height:.3f} m**.")  # fmt: skip
    convs.append(c.export("Tide prediction math"))

    c = ChatGPTConversation(rng, clk, at(3, "18:20"), "gpt-4o")
    c.system()
    c.user("Draft a short email to Priya asking to move our Thursday 1:1 to Friday morning.",
           gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Subject: Moving our 1:1 to Friday?\n\nHi Priya,\n\nWould it work to move our "
                "Thursday 1:1 to Friday morning? Anything between 9 and 11 works for me.\n\n"
                "Thanks,\nDana")  # fmt: skip
    c.user("more casual please")
    c.assistant("Hey Priya — could we push Thursday's 1:1 to Friday morning? Anytime 9-11 is "
                "good for me. Thanks!")  # fmt: skip
    convs.append(c.export("Email to Priya"))

    out = ArrayWriter(root / "chatgpt" / "conversations.json", ", ")
    events = 0
    for conv in convs:
        out.add(json.dumps(conv))
        events += sum(1 for node in conv["mapping"].values() if node["message"] is not None)
    out.close()
    return events, 1


_DEMO_GEMINI = (
    # (days ago, time, conversation, prompt, response html)
    (8, "14:20", 0, "what does 'database is locked' mean in sqlite",
     "<p>SQLite allows only <b>one writer at a time</b>. The error means a connection waited "
     "longer than its busy timeout for another connection's write transaction.</p><ul><li>Keep "
     "write transactions short.</li><li>Set <code>PRAGMA busy_timeout</code>.</li><li>For many "
     "concurrent writers, use a client/server database.</li></ul>"),
    (8, "14:24", 0, "does WAL mode allow two writers in sqlite",
     "<p>No. WAL lets readers run while one writer writes, but writers are still serialized."
     "</p>"),
    (6, "16:52", 1, "difference between rust E0502 and E0499",
     "<p><b>E0502</b>: a value is borrowed mutably while an immutable borrow is alive. "
     "<b>E0499</b>: a value is borrowed mutably twice at once.</p>"),
    (5, "12:30", 2, "high protein vegetarian lunch without tofu or cilantro",
     "<ul><li>Lentil and feta salad (about 30 g protein)</li><li>White bean and halloumi "
     "traybake</li><li>Greek yogurt bowl with hemp seeds</li></ul>"),
    (3, "07:45", 3, "best time of year to visit Lisbon",
     "<p>Late spring (May-June) and early autumn (September-October): warm, fewer crowds than "
     "July and August.</p>"),
    (3, "07:48", 3, "is the Lisbon card worth it for 3 days",
     "<p>Usually yes if you plan to use public transport a lot and visit 3-4 paid sights per "
     "day; otherwise a Viva Viagem card is cheaper.</p>"),
    (1, "12:05", 4, "how long does pizza dough need to rest",
     "<p>At least <b>24 hours</b> in the fridge for good flavour; 2-4 hours at room "
     "temperature works in a pinch.</p>"),
    (1, "12:09", 4, "and at room temperature?",
     "<p>About 2 hours at 22-24 °C, until it has roughly doubled.</p>"),
    (1, "21:40", 5, "regex to match semver like 0.4.0",
     "<pre><code>^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-[0-9A-Za-z.-]+)?$</code></pre>"),
)  # fmt: skip


def demo_gemini(
    root: Path, rng: random.Random, clk: Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs = [hex_id(rng, 16) for _ in range(6)]
    rows: list[tuple[float, dict]] = []
    for days_ago, hhmm, conv, prompt, answer in _DEMO_GEMINI:
        t = at(days_ago, hhmm) + rng.uniform(0, 50)
        rows.append((t, gemini_row(clk, t, prompt, answer, convs[conv])))
    t = at(6, "16:53")
    rows.append((t, feedback_row(clk, t)))
    rows.sort(key=lambda r: -r[0])  # Takeout lists the newest activity first
    out = ArrayWriter(root / GEMINI_DIR / "MyActivity.json")
    for _, row in rows:
        out.add(gemini_dump(row))
    out.close()
    return sum(2 if r["title"].startswith("Prompted ") else 1 for _, r in rows), 1


def demo_notes(
    sink: FileSink, root: Path, clk: Clock, at: Callable[..., float], day: Callable[[int], str]
) -> tuple[int, int]:
    notes = (
        (10, "08:30", "Week plan", ["bookminder", "tidepool"], [
            "# Week plan\n\n- bookminder: search over highlights (small PRs!)\n- tidepool: "
            "offline cache, then the 0.4.0 release\n- Thursday: 1:1 with Priya\n",
        ]),
        (8, "18:00", "Decision: PostgreSQL tsvector over SQLite FTS5", ["bookminder", "decision"], [
            "# Decision: PostgreSQL tsvector over SQLite FTS5\n\nWe tried SQLite FTS5; it broke "
            "with concurrent writers (`database is locked` when the importer and the API write "
            "at once). Use PostgreSQL tsvector + GIN instead. See ADR-004.\n",
            "# Follow-ups\n\n- migration 0008 drops the FTS5 table\n- tests against the real "
            "Postgres on port 5433, no mocks\n- benchmark with 250k highlights\n",
        ]),
        (6, "18:30", "TIL: E0502 and retain()", ["tidepool", "rust", "til"], [
            "# TIL: E0502 and retain()\n\n`error[E0502]` in `Cache::evict_stale`: iterating "
            "`self.entries` while calling `self.entries.remove()`. `HashMap::retain` does both "
            "with one mutable borrow.\n",
        ]),
        (1, "09:00", "Standup", ["standup"], [
            "# Standup\n\n- done: weighted search ranking, `?limit=` on /search\n- done: tidepool "
            "--station flag and retries\n- today: tidepool v0.4.0 release\n",
            "# Blockers\n\n- none; p95 search latency is 95 ms on 250k highlights\n",
        ]),
    )  # fmt: skip
    events = 0
    for days_ago, hhmm, title, tags, sections in notes:
        t = at(days_ago, hhmm)
        name = f"{day(days_ago)}-{slugify(title)}.md"
        sink.put(root / "notes" / name, note_text(clk, t, title, tags, sections))
        events += len(sections) if len(sections) >= 2 else 1
    return events, len(notes)
