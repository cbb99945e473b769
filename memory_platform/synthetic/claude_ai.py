"""claude.ai export: conversations.json (messages with content blocks, thinking, artifacts,
attachments, retries) and projects.json, from random chat-app conversations.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from memory_platform.synthetic.chat_talk import ChatTalk
from memory_platform.synthetic.common import (
    ArrayWriter,
    Clock,
    fit_in_window,
    json_line,
    plan_sizes,
    random_uuid,
    unit_rng,
)
from memory_platform.synthetic.talk import Talk
from memory_platform.synthetic.vocabulary import PROJECTS, Project

# claude.ai's parent pointer for the first message of a conversation.
ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
ACCOUNT_UUID = "5b0e6a8c-2f4d-4c1e-9a7b-3d2e1f0c9b8a"


_UNSUPPORTED = "\n```\nThis block is not supported on your current device yet.\n```\n"


class ClaudeAIConversation:
    def __init__(self, rng: random.Random, clk: Clock, t: float, scale: float = 1.0) -> None:
        self.rng = rng
        self.clk = clk
        self.t = t
        self.scale = scale
        self.messages: list[dict[str, Any]] = []

    def tick(self, lo: float, hi: float) -> float:
        self.t += max(self.rng.uniform(lo, hi) * self.scale, 0.001)
        return self.t

    def _block(self, kind: str, start: float, stop: float, **fields: Any) -> dict[str, Any]:
        block = {"start_timestamp": self.clk.us(start), "stop_timestamp": self.clk.us(stop)}
        block = {"type": kind, **block, "flags": None, **fields}
        return block

    def human(
        self, text: str, parent: str, *, attachment: tuple[str, str] | None = None,
        gap: tuple[float, float] = (20.0, 600.0),
    ) -> str:  # fmt: skip
        t = self.tick(*gap)
        u = random_uuid(self.rng)
        attachments = []
        if attachment:
            name, body = attachment
            attachments.append(
                {
                    "file_name": name,
                    "file_type": "text/plain",
                    "file_size": len(body.encode()),
                    "extracted_content": body,
                }
            )
        ts = self.clk.us(t)
        self.messages.append(
            {
                "uuid": u,
                "parent_message_uuid": parent,
                "sender": "human",
                "text": text,
                "content": [self._block("text", t, t, text=text, citations=[])],
                "created_at": ts,
                "updated_at": ts,
                "attachments": attachments,
                "files": [],
            }
        )
        return u

    def assistant(
        self,
        text: str,
        parent: str,
        *,
        thinking: str | None = None,
        artifact: tuple[str, str, str] | None = None,
        gap: tuple[float, float] = (4.0, 40.0),
    ) -> str:
        t0 = self.tick(*gap)
        u = random_uuid(self.rng)
        content = []
        t = t0
        if thinking:
            t1 = t + self.rng.uniform(1, 8) * self.scale
            content.append(
                self._block(
                    "thinking", t, t1, thinking=thinking,
                    summaries=[{"summary": thinking.split(".")[0][:80]}], cut_off=False,
                )  # fmt: skip
            )
            t = t1
        t1 = t + self.rng.uniform(2, 20) * self.scale
        flat = text
        if artifact:
            title, language, code = artifact
            head, _, tail = text.partition("\n\n")
            content.append(self._block("text", t, t1, text=head, citations=[]))
            art_id = title.lower().replace(" ", "-")[:40]
            t2 = t1 + self.rng.uniform(1, 10) * self.scale
            content.append(
                self._block(
                    "tool_use", t1, t2, name="artifacts",
                    input={"id": art_id, "type": "application/vnd.ant.code", "title": title,
                           "command": "create", "content": code, "language": language,
                           "version_uuid": random_uuid(self.rng)},
                    message="artifacts", integration_name=None, integration_icon_url=None,
                    context=None, display_content=None, approval_options=None, approval_key=None,
                )  # fmt: skip
            )
            content.append(
                {
                    "type": "tool_result", "start_timestamp": None, "stop_timestamp": None,
                    "flags": None, "name": "artifacts",
                    "content": [{"type": "text", "text": "OK", "uuid": random_uuid(self.rng)}],
                    "is_error": False, "message": None, "display_content": None,
                }  # fmt: skip
            )
            t3 = t2 + self.rng.uniform(1, 10) * self.scale
            content.append(self._block("text", t2, t3, text=tail or "Done.", citations=[]))
            flat = head + "\n" + _UNSUPPORTED + "\n" + (tail or "Done.")
            t1 = t3
        else:
            content.append(self._block("text", t, t1, text=text, citations=[]))
        self.t = t1
        self.messages.append(
            {
                "uuid": u,
                "parent_message_uuid": parent,
                "sender": "assistant",
                "text": flat,
                "content": content,
                "created_at": self.clk.us(t0),
                "updated_at": self.clk.us(t1),
                "attachments": [],
                "files": [],
            }
        )
        return u

    def export(self, uuid: str, name: str, account: str, summary: str = "") -> dict[str, Any]:
        created = self.messages[0]["created_at"] if self.messages else self.clk.us(self.t)
        updated = max((m["updated_at"] for m in self.messages), default=created)
        return {
            "uuid": uuid,
            "name": name,
            "summary": summary,
            "created_at": created,
            "updated_at": updated,
            "account": {"uuid": account},
            "chat_messages": self.messages,
        }


def _random_claude_ai(
    index: int, size: int, seed: int, account: str, base: float, scale: float
) -> tuple[dict[str, Any], Clock]:
    rng = unit_rng(seed, "claude-ai", index)
    clk = Clock()
    talk = ChatTalk(rng, rng.choices(PROJECTS, [p.weight for p in PROJECTS])[0])
    title = talk.chat_topic()
    conv_id = random_uuid(rng)
    c = ClaudeAIConversation(rng, clk, base, scale)
    retries = size % 2
    if size >= 8 and rng.random() < 0.15:
        retries += 2
    pairs = (size - retries) // 2
    retry_at = set(rng.sample(range(pairs), min(retries, pairs))) if pairs else set()
    parent = ROOT_PARENT
    for i in range(pairs):
        attach = None
        if i == 0 and rng.random() < 0.1:
            log = talk.topic["error"] + "\n" + talk.test_output(False)
            attach = (f"{talk.topic['mod']}.log", log)
        h = c.human(talk.chat_question(i == 0), parent, attachment=attach)
        kinds = rng.random()
        thinking = talk.thinking() if kinds < 0.25 else None
        artifact = None
        if talk.topic["kind"] != "life" and 0.25 <= kinds < 0.35:
            artifact = (talk.task_title(), talk.lang.fence, talk.code())
        parent = c.assistant(talk.chat_answer(), h, thinking=thinking, artifact=artifact)
        if i in retry_at:
            # "Retry": a second assistant answer under the same prompt, created later.
            parent = c.assistant(talk.chat_answer(), h, gap=(10.0, 120.0))
    if len(c.messages) < size:  # odd size with no room for a retry: a prompt left unanswered
        c.human(talk.chat_question(False), parent)
    summary = talk.fill("Discussion about {mod} in {pkg}.") if rng.random() < 0.3 else ""
    return c.export(conv_id, title, account, summary), clk


def _claude_ai_project(rng: random.Random, clk: Clock, t: float, proj: Project) -> dict:
    talk = Talk(rng, proj)
    created = clk.us(t, "+00:00")
    return {
        "uuid": random_uuid(rng),
        "name": proj.name.replace("_", " ").title(),
        "description": f"Notes, decisions and design docs for {proj.name}.",
        "is_private": True,
        "is_starter_project": False,
        "prompt_template": talk.fill(
            "You are helping Dana with {pkg}. Prefer {pref}. Be concise."
        ),
        "created_at": created,
        "updated_at": clk.us(t + rng.uniform(60, 3600), "+00:00"),
        "creator": {"uuid": ACCOUNT_UUID, "full_name": "Dana Ruiz"},
        "docs": [
            {
                "uuid": random_uuid(rng),
                "filename": "architecture.md",
                "content": talk.fill(
                    "# {pkg} architecture\n\n- {mod} owns {arg}\n- decision: {Y} over {X} "
                    "({reason})\n- services listen on port {port}\n"
                ),
                "created_at": created,
            }
        ],
    }


def write_claude_ai(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = Clock()
    rng = unit_rng(seed, "claude-ai-plan", 0)
    span = t1 - t0
    n_projects = min(8, max(1, budget // 1500)) if budget >= 3 else 0
    sizes = plan_sizes(rng, budget - n_projects, 2, 40) if budget - n_projects >= 2 else (
        [budget - n_projects] if budget - n_projects else []
    )  # fmt: skip
    events = files = 0
    out = ArrayWriter(root / "claude-ai" / "conversations.json")
    cum = 0
    total = max(sum(sizes), 1)
    scale = min(1.0, 3.0 * span / max(total * 60.0, 1.0))
    for i, size in enumerate(sizes):
        base = t0 + span * cum / total + rng.random() * span * size / total * 0.5
        conv, uclk = fit_in_window(
            lambda b, s, i=i, size=size: _random_claude_ai(i, size, seed, ACCOUNT_UUID, b, s),
            base,
            scale,
            t0,
            t1,
        )
        clk.merge(uclk)
        out.add(json_line(conv))
        events += len(conv["chat_messages"])
        cum += size
        if rng.random() < 0.01:  # real exports contain conversations nobody typed into
            t = t0 + rng.random() * span
            empty = {"uuid": random_uuid(rng), "name": "", "summary": "", "created_at": clk.us(t),
                     "updated_at": clk.us(t), "account": {"uuid": ACCOUNT_UUID},
                     "chat_messages": []}  # fmt: skip
            out.add(json.dumps(empty))
    out.close()
    files += 1
    if n_projects:
        proj_out = ArrayWriter(root / "claude-ai" / "projects.json")
        for j in range(n_projects):
            t = t0 + span * (j + rng.random()) / n_projects * 0.5
            proj_out.add(json.dumps(_claude_ai_project(rng, clk, t, PROJECTS[j % len(PROJECTS)])))
        proj_out.close()
        files += 1
        events += n_projects
    return events, files, clk.lo, clk.hi
