"""Random Claude Code sessions: plan the sessions for an event budget, fill each with exactly
its planned number of lines (tool steps, subagents, compaction, summaries), write the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memory_platform.synthetic.claude_code_session import ClaudeCodeSession
from memory_platform.synthetic.common import (
    Clock,
    FileSink,
    fit_in_window,
    hex_id,
    plan_sizes,
    random_uuid,
    unit_rng,
)
from memory_platform.synthetic.talk import Talk
from memory_platform.synthetic.vocabulary import (
    CC_VERSIONS,
    CLAUDE_MODELS,
    PROJECTS,
    SLUG_WORDS,
    Project,
)

_ENCODE_CWD = re.compile(r"[^A-Za-z0-9]")


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name: every char outside [A-Za-z0-9] becomes '-'."""
    return _ENCODE_CWD.sub("-", cwd)


def todo_list(items: list[str], done: int) -> list[dict]:
    out = []
    for i, item in enumerate(items):
        status = "completed" if i < done else ("in_progress" if i == done else "pending")
        active = item[:1].lower() + item[1:]
        out.append({"content": item, "status": status, "activeForm": "Working on " + active})
    return out


def _random_tool_step(s: ClaudeCodeSession, talk: Talk, edits: dict[str, int], room: int) -> None:
    """One tool call and its result (two lines, three when `room` allows a file-history
    snapshot after an edit), in a shape that fits the current topic."""
    rng, t = s.rng, talk.topic
    proj = talk.project
    k = rng.random()
    if k < 0.30:
        s.read(t["path"], talk.code())
    elif k < 0.55:
        ok = rng.random() < 0.7
        cmd = t["test_cmd"] if rng.random() < 0.6 else t["cmd"]
        s.bash(cmd, talk.fill(rng.choice(("Run the {mod} tests", "Check {mod}", "Run {fn}"))),
               talk.test_output(ok), ok)  # fmt: skip
    elif k < 0.75:
        original = talk.code()
        lines = original.split("\n")
        old = rng.choice(lines[1:] or lines)
        indent = old[: len(old) - len(old.lstrip())]
        new = f"{indent}{talk.lang.comment} {talk.fill(t['fix'])}\n{old}"
        s.edit(t["path"], original, old, new)
        edits[t["file"]] = edits.get(t["file"], 1) + 1
        if room >= 3 and rng.random() < 0.5:
            s.snapshot_update(t["file"], edits[t["file"]])
    elif k < 0.85:
        n = rng.randint(1, 4)
        files = [f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}" for _ in range(n)]
        s.grep(t["fn"], proj.cwd, sorted(set(files)))
    elif k < 0.90:
        ext = {"python": "py", "rust": "rs", "ts": "tsx", "go": "go", "infra": "tf"}[proj.lang]
        files = sorted({f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}" for _ in range(3)})
        s.glob(f"**/*{t['mod']}*.{ext}", files)
    elif k < 0.95:
        path = f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}"
        s.write(path, talk.code())
        edits[path] = 1
    else:
        items = [
            talk.fill("Reproduce {error_code}"),
            talk.fill("Fix {fn} in {file}"),
            talk.fill("Run {test_cmd}"),
        ]
        done = rng.randint(0, 2)
        s.todo(todo_list(items, max(done - 1, 0)) if done else [], todo_list(items, done))


def _subagent_body(child: ClaudeCodeSession, talk: Talk, budget: int, prompt: str) -> str:
    """Exactly `budget` records in the subagent file: its prompt, tool steps, a final answer."""
    child.prompt(prompt, with_snapshot=False, gap=(0.01, 0.3))
    answer = talk.fill(
        "Found {n} call sites of `{fn}`. The relevant ones are in {file} (line {line}) and in "
        "the {mod2} module. {cause}; the safest fix is to {fix}."
    )
    rng = child.rng
    while True:
        r = budget - len(child.lines)
        if r <= 0:
            break
        if r <= 2:
            if r == 2:
                child.think(talk.thinking())
            child.say(answer)
            break
        if rng.random() < 0.3 and r >= 4:
            child.say(talk.progress())
        k = rng.random()
        t = talk.topic
        if k < 0.5:
            child.read(t["path"], talk.code())
        elif k < 0.8:
            child.grep(t["fn"], talk.project.cwd, [t["path"]])
        else:
            log = "\n".join(f"{hex_id(rng, 7)} {talk.task_title()}" for _ in range(3))
            child.bash(f"git log --oneline -n {rng.randint(3, 12)} -- {t['file']}", "History", log)
    return answer


@dataclass
class SessionPlan:
    index: int
    project: Project
    size: int
    sub_size: int
    base: float
    version: str


def _random_session(
    plan: SessionPlan, seed: int, base: float, scale: float
) -> tuple[tuple[str, dict[str, str], str], Clock]:
    """One Claude Code session with exactly `plan.size` lines over its main and subagent files."""
    rng = unit_rng(seed, "claude-code", plan.index)
    clk = Clock()
    proj = plan.project
    talk = Talk(rng, proj)
    v21 = plan.version.startswith("2.1")
    slug = "-".join(rng.sample(SLUG_WORDS, 3)) if v21 and rng.random() < 0.7 else None
    session_id = random_uuid(rng)
    s = ClaudeCodeSession(
        rng,
        clk,
        session_id=session_id,
        cwd=proj.cwd,
        branch=rng.choice(proj.branches),
        version=plan.version,
        model=rng.choice(CLAUDE_MODELS),
        t=base,
        scale=scale,
        slug=slug,
    )
    n_summary = 0
    if plan.size >= 20 and rng.random() < 0.3:
        n_summary = rng.randint(1, 2)
    body = plan.size - plan.sub_size - n_summary
    subagents: dict[str, str] = {}
    compact_at = int(body * rng.uniform(0.4, 0.7)) if body >= 80 and rng.random() < 0.15 else -1
    edits: dict[str, int] = {}
    need_prompt = True
    first = True
    steps_left = 0
    while (r := body - len(s.lines)) > 0:
        if need_prompt:
            if 0 <= compact_at <= len(s.lines) and r >= 4:
                s.compact(talk.compact_summary())
                compact_at = -1
                continue
            if not first and r >= 5 and rng.random() < 0.02:
                s.command("model", f"Set model to {rng.choice(CLAUDE_MODELS)}")
                continue
            if not first and r >= 2 and rng.random() < 0.02:
                s.interrupt()
                continue
            if first or rng.random() < 0.3:
                talk.new_topic()
                text = talk.prompt()
            else:
                text = talk.followup()
            s.prompt(text, with_snapshot=r >= 2 and rng.random() < 0.85)
            need_prompt = False
            steps_left = rng.randint(0, 7)
            continue
        if plan.sub_size and not subagents and r >= 2:
            prompt = talk.fill(
                "Find every place that calls `{fn}` or reads `{arg}` in {pkg}. Report file paths, "
                "line numbers and anything that looks like {cause}."
            )
            child = s.task(
                talk.fill("Find callers of {fn}"),
                prompt,
                rng.choice(("Explore", "general-purpose")),
                lambda c: _subagent_body(c, talk, plan.sub_size, prompt),
            )
            subagents[str(child.agent_id)] = child.text()
            continue
        if r == 1 or steps_left <= 0:
            if r >= 2 and rng.random() < 0.3:
                s.think(talk.thinking())
            s.say(talk.done())
            need_prompt = True
            first = False
            continue
        lead = 0
        if r >= 4 and rng.random() < 0.25:
            s.think(talk.thinking())
            lead += 1
        if r - lead >= 3 and rng.random() < 0.5:
            s.say(talk.intro() if steps_left > 3 else talk.progress())
        _random_tool_step(s, talk, edits, body - len(s.lines))
        steps_left -= 1
    for _ in range(n_summary):
        leaf = s.last if rng.random() < 0.6 else random_uuid(rng)
        s.summary(talk.task_title(), leaf)
    return (session_id, subagents, s.text()), clk


def plan_claude_code(
    budget: int, seed: int, t0: float, t1: float
) -> tuple[list[SessionPlan], float]:
    rng = unit_rng(seed, "claude-code-plan", 0)
    span = t1 - t0
    # Uniform rather than log-uniform: fewer, longer files (creating a file is the slow part
    # on some disks) and closer to real transcripts, which are rarely tiny.
    sizes = plan_sizes(rng, budget, 10, 200, log=False) if budget >= 10 else [budget]
    sizes = [size for size in sizes if size > 0]
    weights = [p.weight for p in PROJECTS]
    # Dense histories (many events in few days) squeeze the natural gaps so sessions overlap
    # less; 25 s is about the mean natural gap between records.
    scale = min(1.0, 3.0 * span / max(budget * 25.0, 1.0))
    plans: list[SessionPlan] = []
    cum = 0
    for i, size in enumerate(sizes):
        frac = cum / budget
        base = t0 + span * frac + rng.random() * span * size / budget * 0.5
        vidx = int(frac * len(CC_VERSIONS) + rng.uniform(-0.7, 0.7))
        version = CC_VERSIONS[min(max(vidx, 0), len(CC_VERSIONS) - 1)]
        sub = 0
        if size >= 30 and rng.random() < 0.05:
            sub = rng.randint(6, min(40, size // 3))
        plans.append(SessionPlan(i, rng.choices(PROJECTS, weights)[0], size, sub, base, version))
        cum += size
    if plans and not any(p.sub_size for p in plans):
        # Always show at least one subagent transcript when any session is big enough.
        big = max(plans, key=lambda p: p.size)
        if big.size >= 30:
            big.sub_size = rng.randint(6, min(40, big.size // 3))
    for plan in plans:
        if plan.sub_size and not plan.version.startswith("2.1"):
            plan.version = rng.choice(CC_VERSIONS[5:])  # subagents/ folders are a 2.1.x layout
    return plans, scale


def write_claude_code(
    root: Path, plans: list[SessionPlan], seed: int, t0: float, t1: float, scale: float
) -> tuple[int, int, int, int]:
    clk = Clock()
    sink = FileSink()
    lines = files = 0
    try:
        for plan in plans:
            (session_id, subs, text), uclk = fit_in_window(
                lambda b, s, plan=plan: _random_session(plan, seed, b, s),
                plan.base,
                scale,
                t0,
                t1,
            )
            clk.merge(uclk)
            folder = root / "claude-code" / "projects" / encode_cwd(plan.project.cwd)
            sink.put(folder / f"{session_id}.jsonl", text)
            lines += text.count("\n")
            files += 1
            for agent_id, sub_text in subs.items():
                sink.put(folder / session_id / "subagents" / f"agent-{agent_id}.jsonl", sub_text)
                lines += sub_text.count("\n")
                files += 1
    finally:
        sink.close()
    return lines, files, clk.lo, clk.hi
