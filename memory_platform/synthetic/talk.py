"""Developer chatter for one project, drawn from the word tables one topic at a time.

`Talk` holds what Claude Code sessions say (prompts, thinking, progress, answers, tool output);
`chat_talk.ChatTalk` adds what chat apps are asked.
"""

from __future__ import annotations

import random
import re
from typing import Any

from memory_platform.synthetic.common import fast_randint, hex_id
from memory_platform.synthetic.languages import LANGS
from memory_platform.synthetic.vocabulary import (
    ACKS,
    ARGS,
    FEATURES,
    FOLLOWUPS,
    PORTS,
    PREFERENCES,
    REFACTORS,
    TYPE_SUFFIXES,
    Project,
    pascal_case,
)


class Talk:
    """Assembles developer chatter for one project from `vocabulary` and `languages`.

    `topic` is the current unit of work (a file, a function, an error, a decision); prompts,
    tool calls and answers in one exchange all draw from it so a conversation stays coherent.
    """

    def __init__(self, rng: random.Random, project: Project) -> None:
        self.rng = rng
        self.project = project
        self.lang = LANGS[project.lang]
        self.topic: dict[str, Any] = {}
        self.new_topic()

    def fill(self, template: str) -> str:
        return template.format_map(self.topic)

    def new_topic(self) -> dict[str, Any]:
        rng, lang, proj = self.rng, self.lang, self.project
        mod, mod2 = rng.sample(proj.modules, 2)
        mod_snake = mod if proj.lang != "ts" else re.sub(r"(?<!^)([A-Z])", r"_\1", mod).lower()
        mod_name = mod if proj.lang != "ts" else mod[:1].lower() + mod[1:]
        Mod = pascal_case(mod_snake) if proj.lang != "ts" else mod
        lib, ver = rng.choice(lang.libs)
        x, y, reason = rng.choice(lang.alts)
        n = fast_randint(rng, 2, 64)
        t: dict[str, Any] = {
            "pkg": proj.pkg,
            "mod": mod_name,
            "Mod": Mod,
            "mod2": mod2,
            "arg": rng.choice(ARGS),
            "Type": Mod + rng.choice(TYPE_SUFFIXES),
            "line": fast_randint(rng, 12, 480),
            "col": fast_randint(rng, 5, 40),
            "n": n,
            "m": n + fast_randint(rng, 1, 90),
            "port": rng.choice(PORTS),
            "hex": hex_id(rng, 6),
            "lib": lib,
            "ver": ver,
            "ms": fast_randint(rng, 40, 2400),
            "branch": rng.choice(proj.branches),
            "secs": "%.2f" % rng.uniform(0.3, 40.0),
        }
        self.topic = t
        fn = self.fill(rng.choice(lang.fns))
        t["fn"] = fn
        t["Fn"] = fn[:1].upper() + fn[1:]
        t["X"], t["Y"] = x, y
        t["reason"] = self.fill(reason)
        # The file being worked on is a module, not go.mod or vite.config.ts.
        t["file"] = self.fill(rng.choice([f for f in lang.files if "{" in f]))
        t["cmd"] = self.fill(rng.choice(lang.cmds))
        t["test_cmd"] = self.fill(lang.test_cmd)
        err = self.fill(rng.choice(lang.errors))
        t["error"] = err
        t["error1"] = err.split("\n", 1)[0]
        code = re.search(r"E\d{4}|TS\d{4}|[A-Z][A-Za-z]+Error|OOMKilled|panic|DATA RACE", err)
        t["error_code"] = code.group(0) if code else t["error1"][:24]
        cause, fix = rng.choice(lang.causes)
        t["cause"] = self.fill(cause)
        t["fix"] = self.fill(fix)
        t["feature"] = self.fill(rng.choice(FEATURES))
        t["pref"] = self.fill(rng.choice(PREFERENCES))
        t["path"] = f"{proj.cwd}/{t['file']}"
        return t

    # -- Claude Code -------------------------------------------------------------------------

    def prompt(self) -> str:
        rng = self.rng
        k = rng.randrange(12)
        if k == 0:
            s = "{error}\n\nwhen I run `{cmd}`. can you figure out what's going on?"
        elif k == 1:
            s = "add {feature} to {file}. keep it small, I want to review it in one sitting"
        elif k == 2:
            s = "the {mod} tests are flaky on CI ({n} failures in the last {m} runs). look into it"
        elif k == 3:
            s = "refactor {file}: " + rng.choice(REFACTORS)
        elif k == 4:
            s = "why is {fn} so slow? p95 is {ms} ms on staging and it was under 100 last week"
        elif k == 5:
            s = "bump {lib} to {ver} and fix whatever breaks"
        elif k == 6:
            s = "we tried {X} last week and it broke ({reason}). switch {mod} to {Y}"
        elif k == 7:
            s = "write tests for `{fn}` in {file}, especially the empty and the {n}-item case"
        elif k == 8:
            s = "port {port} is already in use when I start the {mod} service. what's holding it?"
        elif k == 9:
            s = "explain what `{fn}` does, I wrote it {n} months ago and have no idea anymore"
        elif k == 10:
            s = "CI on {branch} fails with\n```\n{error1}\n```\nfix it. btw I prefer {pref}"
        else:
            s = "continue with {mod}: {feature}, then run `{test_cmd}`"
        return self.fill(s)

    def followup(self) -> str:
        self.topic["n"] = fast_randint(self.rng, 2, 64)
        self.topic["line"] = fast_randint(self.rng, 12, 480)
        return self.rng.choice(ACKS) + self.fill(self.rng.choice(FOLLOWUPS))

    def intro(self) -> str:
        self.topic["line"] = fast_randint(self.rng, 12, 480)
        s = self.rng.choice(
            (
                "I'll start by reading {file} to see how `{fn}` is wired up.",
                "Let me reproduce the failure first with `{test_cmd}`, then look at line {line}.",
                "Let me search for every caller of `{fn}` before changing anything in {file}.",
                "I'll look at {file} and the {mod2} module, since both touch `{arg}`.",
                "First I'll check which version of {lib} is pinned (we expect {ver}).",
                "Let me check the current state of {mod} on {branch} before I touch it.",
                "I'll read {file} around line {line}, where `{arg}` is set.",
            )
        )
        return self.fill(s)

    def thinking(self) -> str:
        s = self.rng.choice(
            (
                "The user wants {feature} in {file}. The risky part is `{fn}`: it is called "
                "from {mod2} too, so the signature must stay. I should read the file, make the "
                "smallest change, and run `{test_cmd}`.",
                "The error is `{error1}`. My guess: {cause}. If that's right the fix is to "
                "{fix}. Let me verify by reading {file} around line {line}.",
                "They said {X} broke before ({reason}). So {Y} is the direction for {mod}; I "
                "need to check whether `{fn}` or anything in {mod2} still depends on {X}.",
                "p95 {ms} ms for `{fn}` smells like a missing index or an N+1. I'll grep for "
                "the query in {file} first, then time it with {n} rows.",
                "{lib} {ver} changed a default that `{fn}` relies on. Check {file} line {line} "
                "and the {n} call sites before bumping anything.",
                "Before editing {file} I want to know who else reads `{arg}`: {mod2} did last "
                "time. Then the fix: {fix}.",
            )
        )
        return self.fill(s)

    def progress(self) -> str:
        s = self.rng.choice(
            (
                "Found it: {cause} ({file}:{line}).",
                "The test output confirms it — `{error_code}` comes from {file}:{line}.",
                "That narrows it down to `{fn}` at line {line}. Now I'll apply the fix.",
                "Callers in {mod2} look fine. Next I'll update {file}.",
                "Now let me run `{test_cmd}` again.",
                "The change compiles. Running `{test_cmd}` ({n} tests).",
                "{n} call sites of `{fn}`, all in {mod} and {mod2}. Editing {file}.",
                "`{arg}` is only written in {file}; the other {n} places just read it.",
            )
        )
        return self.fill(s)

    def done(self) -> str:
        s = self.rng.choice(
            (
                "Done. The problem was that {cause}. I changed {file} to {fix}.\n\n"
                "- `{test_cmd}`: {n} passed\n- no public signatures changed\n\n"
                "You may want to also look at {mod2}, it has the same pattern.",
                "Fixed. `{error_code}` is gone: {fix}. All {m} tests pass.",
                "I switched {mod} from {X} to {Y} ({reason}). The diff is limited to {file} "
                "and its test. p95 went from {ms} ms to {n} ms locally.",
                "Added {feature} in {file}. I kept `{fn}` backwards compatible and added "
                "{n} tests for the edge cases.",
                "`{fn}` takes the {arg}, looks it up in {mod} and falls back to {mod2} when "
                "the cache is cold. The {n}-second timeout comes from the {lib} {ver} default.",
                "Port {port} was held by a leftover `{mod}` container from yesterday. "
                "I stopped it; "
                "the service starts fine now.",
            )
        )
        return self.fill(s)

    def task_title(self) -> str:
        s = self.rng.choice(
            (
                "Fix {error_code} in {mod}",
                "{Y} instead of {X} for {mod}",
                "Add {feature}",
                "Speed up {fn}",
                "Flaky {mod} tests on {branch}",
                "Bump {lib} to {ver}",
            )
        )
        return self.fill(s)

    def compact_summary(self) -> str:
        return self.fill(
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below:\nAnalysis:\nThe user is working on "
            "{pkg} ({mod}). Earlier we hit `{error1}` and traced it to the fact that {cause}.\n\n"
            "Summary:\n1. Primary Request and Intent:\n   {feature} in {file}, keeping `{fn}` "
            "backwards compatible.\n2. Key Technical Concepts:\n   - {X} vs {Y}: {reason}\n"
            "   - {lib} {ver}\n3. Files and Code Sections:\n   - {file}\n4. Errors and fixes:\n"
            "   - {error_code}: {fix}\n5. Pending Tasks:\n   - run `{test_cmd}` on {branch}\n"
            "6. Current Work:\n   Updating {mod2} to the same pattern."
        )

    def code(self) -> str:
        return self.fill(self.rng.choice(self.lang.snippets))

    def test_output(self, ok: bool) -> str:
        rng = self.rng
        extra = {
            "dots": "." * rng.randint(8, 60),
            "oks": "\n".join(
                f"test {self.topic['mod']}::tests::case_{i} ... ok"
                for i in range(rng.randint(2, 5))
            ),
        }
        template = self.lang.pass_out if ok else self.lang.fail_out
        return template.format_map({**self.topic, **extra})
