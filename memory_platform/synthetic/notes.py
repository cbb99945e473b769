"""Markdown notes with YAML front matter: decisions, bug write-ups, standups, ideas."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from memory_platform.synthetic.common import Clock, FileSink, unit_rng
from memory_platform.synthetic.talk import Talk
from memory_platform.synthetic.vocabulary import CONCEPTS, PROJECTS


def note_text(clk: Clock, t: float, title: str, tags: list[str], sections: list[str]) -> str:
    head = (
        f"---\ndate: {clk.seconds(t)}\ntitle: {json.dumps(title)}\n"
        f"tags: [{', '.join(tags)}]\n---\n"
    )
    return head + "\n" + "\n\n".join(s.strip("\n") for s in sections) + "\n"


def _random_note_sections(talk: Talk, count: int) -> tuple[str, list[str]]:
    rng = talk.rng
    talk.new_topic()
    pool = [
        (
            "Decision: {Y} over {X}",
            "We tried {X} in {mod}; it broke because {reason}. Going with {Y}.\n\n"
            "## Why\n- {reason}\n- {fix}\n- p95 target: {n} ms (was {ms} ms)\n",
        ),
        (
            "Bug: {error_code} in {mod}",
            "Symptom: `{error1}` when running `{cmd}`.\n\nRoot cause: {cause}.\n\n"
            "## Fix\n{fix}. Regression test lives in {file}.\n",
        ),
        (
            "Standup {pkg}",
            "- done: {feature} ({file})\n- next: bump {lib} to {ver}\n"
            "- blocked: CI on {branch} is red ({error_code})\n",
        ),
        (
            "Preferences",
            "- I prefer {pref}\n- default local Postgres port: {port}\n"
            "- review PRs before lunch, deploys after 14:00\n",
        ),
        (
            "Reading notes: {concept}",
            "Key idea: ownership and time made explicit. Applies to {mod} because `{fn}` "
            "touches shared state from {n} workers.\n\n## Open questions\n- does {Y} change "
            "this?\n",
        ),
        (
            "Ideas for {pkg}",
            "- {feature}\n- split {file} ({m} lines is too long)\n- try {Y} in {mod2}\n",
        ),
    ]
    talk.topic["concept"] = rng.choice(CONCEPTS)
    picks = rng.sample(pool, count)
    sections = [f"# {talk.fill(h)}\n\n{talk.fill(b)}" for h, b in picks]
    return talk.fill(picks[0][0]), sections


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "note"


def write_notes(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = unit_rng(seed, "notes-plan", 0)
    folder = root / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    span = t1 - t0
    names: set[str] = set()
    events = files = 0
    i = 0
    sink = FileSink()
    while events < budget:
        count = 2 if budget - events >= 2 and rng.random() < 0.7 else 1
        urng = unit_rng(seed, "notes", i)
        talk = Talk(urng, urng.choices(PROJECTS, [p.weight for p in PROJECTS])[0])
        title, sections = _random_note_sections(talk, count)
        t = t0 + span * (events + urng.random() * count) / budget
        t = min(t, t1)
        text = note_text(clk, t, title, [talk.project.pkg, "notes"], sections)
        name = time.strftime("%Y-%m-%d", time.gmtime(int(t))) + "-" + slugify(title)
        stem, k = name, 2
        while name in names:
            name = f"{stem}-{k}"
            k += 1
        names.add(name)
        sink.put(folder / f"{name}.md", text)
        events += count
        files += 1
        i += 1
    sink.close()
    return events, files, clk.lo, clk.hi
