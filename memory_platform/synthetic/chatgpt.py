"""ChatGPT export: conversations.json, each conversation a tree of message nodes (system
prompts, code runs, reasoning, regenerated answers), from random chat-app conversations.
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
    hex_id,
    plan_sizes,
    random_uuid,
    unit_rng,
)
from memory_platform.synthetic.vocabulary import GPT_MODELS, PROJECTS


class ChatGPTConversation:
    def __init__(self, rng: random.Random, clk: Clock, t: float, model: str, scale: float = 1.0):
        self.rng = rng
        self.clk = clk
        self.t = t
        self.scale = scale
        self.model = model
        self.mapping: dict[str, dict[str, Any]] = {
            "client-created-root": {
                "id": "client-created-root", "message": None, "parent": None, "children": [],
            }  # fmt: skip
        }
        self.current = "client-created-root"
        self.first_time: float | None = None

    def tick(self, lo: float, hi: float) -> float:
        self.t += max(self.rng.uniform(lo, hi) * self.scale, 0.001)
        if self.first_time is None:
            self.first_time = self.t
        return self.t

    def _node(
        self,
        parent: str,
        role: str,
        content: dict[str, Any],
        *,
        t: float | None,
        name: str | None = None,
        recipient: str = "all",
        weight: float = 1.0,
        end_turn: bool | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str:
        nid = node_id or random_uuid(self.rng)
        msg = {
            "id": nid,
            "author": {"role": role, "name": name, "metadata": {}},
            "create_time": None if t is None else self.clk.epoch(t),
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": end_turn,
            "weight": weight,
            "metadata": metadata or {},
            "recipient": recipient,
            "channel": None,
        }
        self.mapping[nid] = {"id": nid, "message": msg, "parent": parent, "children": []}
        self.mapping[parent]["children"].append(nid)
        return nid

    def _assistant_meta(self, parent: str) -> dict[str, Any]:
        return {
            "finish_details": {"type": "stop", "stop_tokens": [200002]},
            "is_complete": True,
            "citations": [],
            "content_references": [],
            "message_type": "next",
            "model_slug": self.model,
            "default_model_slug": self.model,
            "parent_id": parent,
            "request_id": hex_id(self.rng, 16) + "-IAD",
            "timestamp_": "absolute",
        }

    def system(self) -> str:
        self.current = self._node(
            self.current, "system", {"content_type": "text", "parts": [""]}, t=None,
            weight=0.0, end_turn=True, metadata={"is_visually_hidden_from_conversation": True},
        )  # fmt: skip
        return self.current

    def user(self, text: str, parent: str | None = None, gap=(30.0, 900.0)) -> str:
        t = self.tick(*gap)
        nid = "aaa2" + random_uuid(self.rng)[4:]  # the web client's ids for user turns
        self.current = self._node(
            parent or self.current, "user", {"content_type": "text", "parts": [text]}, t=t,
            metadata={"request_id": hex_id(self.rng, 16) + "-IAD", "message_source": None,
                      "timestamp_": "absolute", "message_type": None},
            node_id=nid,
        )  # fmt: skip
        return self.current

    def assistant(self, text: str, parent: str | None = None, gap=(3.0, 40.0)) -> str:
        t = self.tick(*gap)
        p = parent or self.current
        self.current = self._node(
            p, "assistant", {"content_type": "text", "parts": [text]}, t=t, end_turn=True,
            metadata=self._assistant_meta(p),
        )  # fmt: skip
        return self.current

    def code_run(self, code: str, output: str) -> None:
        """Code interpreter: assistant code to `python`, then the tool's execution_output."""
        t = self.tick(2.0, 20.0)
        p = self.current
        self.current = self._node(
            p, "assistant",
            {"content_type": "code", "language": "unknown", "response_format_name": None,
             "text": code},
            t=t, recipient="python", end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip
        t2 = self.tick(0.5, 8.0)
        run = {
            "status": "success", "run_id": random_uuid(self.rng), "start_time": self.clk.epoch(t),
            "update_time": self.clk.epoch(t2), "code": code, "end_time": self.clk.epoch(t2),
            "final_expression_output": output, "in_kernel_exception": None,
            "system_exception": None, "messages": [], "jupyter_messages": [],
            "timeout_triggered": None,
        }  # fmt: skip
        self.current = self._node(
            self.current, "tool", {"content_type": "execution_output", "text": output}, t=t2,
            name="python", metadata={"is_complete": True, "aggregate_result": run,
                                     "timestamp_": "absolute"},
        )  # fmt: skip

    def reasoning(self, summary: str, thought: str) -> None:
        t = self.tick(1.0, 6.0)
        p = self.current
        self.current = self._node(
            p, "assistant",
            {"content_type": "thoughts",
             "thoughts": [{"summary": summary, "content": thought, "chunks": [], "finished": True}],
             "source_analysis_msg_id": random_uuid(self.rng)},
            t=t, end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip
        secs = self.rng.randint(3, 40)
        t2 = self.tick(secs * 0.5, secs)
        p = self.current
        self.current = self._node(
            p, "assistant", {"content_type": "reasoning_recap", "content": f"Thought for {secs}s"},
            t=t2, end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip

    def export(self, title: str | None) -> dict[str, Any]:
        created = self.first_time if self.first_time is not None else self.t
        conv_id = "%08x-%s-8%s-%s%s-%s" % (
            int(created), hex_id(self.rng, 4), hex_id(self.rng, 3),
            "89ab"[self.rng.getrandbits(2)], hex_id(self.rng, 3), hex_id(self.rng, 12),
        )  # fmt: skip
        return {
            "title": title,
            "create_time": self.clk.epoch(created),
            "update_time": self.clk.epoch(self.t + 0.5),
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": self.current,
            "plugin_ids": None,
            "conversation_id": conv_id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "gizmo_type": None,
            "is_archived": False,
            "is_starred": None,
            "safe_urls": [],
            "blocked_urls": [],
            "default_model_slug": self.model,
            "conversation_origin": None,
            "voice": None,
            "async_status": None,
            "disabled_tool_ids": [],
            "is_do_not_remember": False,
            "memory_scope": "global_enabled",
            "sugar_item_id": None,
            "id": conv_id,
        }


def _random_chatgpt(index: int, size: int, seed: int, base: float, scale: float):
    rng = unit_rng(seed, "chatgpt", index)
    clk = Clock()
    talk = ChatTalk(rng, rng.choices(PROJECTS, [p.weight for p in PROJECTS])[0])
    title = talk.chat_topic()
    model = rng.choice(GPT_MODELS)
    c = ChatGPTConversation(rng, clk, base, model, scale)
    left = size
    if size >= 3 and rng.random() < 0.6:
        c.system()
        left -= 1
    first = True
    cost = {"plain": 2, "regen": 3, "code": 4, "think": 4}
    while left > 0:
        if left == 1:
            kind = "user_only"
        elif left <= 4:
            kind = {2: "plain", 3: "regen", 4: rng.choice(("code", "think", "plain"))}[left]
        else:
            kind = rng.choices(("plain", "regen", "code", "think"), (10, 1, 2, 2))[0]
            if left - cost[kind] == 1:
                kind = "regen" if cost[kind] == 2 else "plain"
        u = c.user(talk.chat_question(first))
        first = False
        left -= 1
        if kind == "user_only":
            break
        if kind == "code":
            n = rng.randint(3, 40)
            samples = ", ".join(str(rng.randint(40, 900)) for _ in range(n % 7 + 3))
            code = (
                f"import statistics\nsamples = [{samples}]\n"
                "statistics.quantiles(samples, n=20)[-1]"
            )
            c.code_run(code, "%.1f" % rng.uniform(80, 900))
            left -= 2
        elif kind == "think":
            c.reasoning(talk.fill("Weighing {X} against {Y}"), talk.thinking())
            left -= 2
        c.assistant(talk.chat_answer())
        left -= 1
        if kind == "regen":
            c.assistant(talk.chat_answer(), parent=u, gap=(15.0, 200.0))
            left -= 1
    title_out = title if rng.random() > 0.02 else None  # null titles happen in real exports
    return c.export(title_out), clk


def write_chatgpt(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = unit_rng(seed, "chatgpt-plan", 0)
    span = t1 - t0
    sizes = plan_sizes(rng, budget, 3, 60) if budget >= 3 else [budget]
    scale = min(1.0, 3.0 * span / max(budget * 60.0, 1.0))
    out = ArrayWriter(root / "chatgpt" / "conversations.json", ", ")
    events = cum = 0
    for i, size in enumerate(sizes):
        base = t0 + span * cum / budget + rng.random() * span * size / budget * 0.5
        conv, uclk = fit_in_window(
            lambda b, s, i=i, size=size: _random_chatgpt(i, size, seed, b, s), base, scale, t0, t1
        )
        clk.merge(uclk)
        # Real exports come from Python's json module: ASCII-escaped, ", " and ": " separators.
        out.add(json.dumps(conv))
        events += sum(1 for node in conv["mapping"].values() if node["message"] is not None)
        cum += size
    out.close()
    return events, 1, clk.lo, clk.hi
