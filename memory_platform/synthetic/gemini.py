"""Gemini Apps activity from Google Takeout: MyActivity.json, newest row first (prompts with
their HTML answers, and "Gave feedback" rows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_platform.synthetic.chat_talk import ChatTalk
from memory_platform.synthetic.common import ArrayWriter, Clock, hex_id, plan_sizes, unit_rng
from memory_platform.synthetic.vocabulary import PROJECTS

GEMINI_DIR = Path("gemini/Takeout/My Activity/Gemini Apps")


def gemini_row(clk: Clock, t: float, prompt: str, html_: str, conv: str) -> dict:
    url = f"https://gemini.google.com/app/{conv}"
    row: dict[str, Any] = {
        "header": "Gemini Apps",
        "title": "Prompted " + prompt,
        "details": [{"name": url, "url": url}],
        "time": clk.ms(t),
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
        "safeHtmlItem": [{"html": html_}],
    }
    return row


def feedback_row(clk: Clock, t: float) -> dict:
    return {
        "header": "Gemini Apps",
        "title": "Gave feedback: Good response",
        "time": clk.ms(t),
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
    }


def gemini_dump(row: dict) -> str:
    # Takeout pretty-prints with two spaces and writes the rows as `[{ ... },{ ... }]`.
    return json.dumps(row, indent=2, ensure_ascii=False)


def write_gemini(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = unit_rng(seed, "gemini-plan", 0)
    span = t1 - t0
    feedback = budget % 2 + (2 if budget >= 20 else 0)
    rows = (budget - feedback) // 2
    sizes = plan_sizes(rng, rows, 1, 8) if rows else []
    fb_at = set(rng.sample(range(len(sizes)), min(feedback, len(sizes)))) if sizes else set()
    units = [size * 2 + (1 if i in fb_at else 0) for i, size in enumerate(sizes)]
    lone_feedback = feedback - len(fb_at)
    total = max(sum(units) + lone_feedback, 1)
    out = ArrayWriter(root / GEMINI_DIR / "MyActivity.json")
    events = 0
    cum = 0
    # Rows are newest first: walk the windows from the end of the range backwards, and give
    # each conversation a window of its own so the global order holds.
    for i, size in enumerate(sizes):
        urng = unit_rng(seed, "gemini", i)
        ucl = Clock()
        w_hi = t1 - span * cum / total
        w_lo = t1 - span * (cum + units[i]) / total
        cum += units[i]
        room = (w_hi - w_lo) * 0.96
        gaps = [urng.uniform(20.0, 600.0) for _ in range(size)]
        natural = sum(gaps) + (30.0 if i in fb_at else 0.0)
        squeeze = min(1.0, room / natural) if natural > 0 else 1.0
        t = w_lo + (w_hi - w_lo) * 0.02 + urng.random() * max(room - natural * squeeze, 0.0)
        conv = hex_id(urng, 16)
        talk = ChatTalk(urng, urng.choices(PROJECTS, [p.weight for p in PROJECTS])[0])
        built: list[dict] = []
        for j, g in enumerate(gaps):
            t += g * squeeze
            prompt = talk.gemini_prompt(j == 0)
            row = gemini_row(ucl, t, prompt, talk.gemini_html(), conv)
            if urng.random() < 0.02:  # a regenerated draft kept beside the first one
                row["safeHtmlItem"].append({"html": talk.gemini_html()})
            built.append(row)
        if i in fb_at:
            t += urng.uniform(3.0, 30.0) * squeeze
            built.append(feedback_row(ucl, t))
        clk.merge(ucl)
        for row in reversed(built):
            out.add(gemini_dump(row))
            events += 2 if row["title"].startswith("Prompted ") else 1
    for j in range(lone_feedback):
        t = t0 + span * 0.001 * (lone_feedback - j)
        out.add(gemini_dump(feedback_row(clk, t)))
        events += 1
    out.close()
    return events, 1, clk.lo, clk.hi
