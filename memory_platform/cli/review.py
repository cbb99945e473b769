"""`memory-platform review`: the review gate in a terminal.

    memory-platform review [--namespace N]

`review` walks the entries waiting for review, namespace by namespace (or only N), and asks
what to do with each: [a]pprove, [e]dit then approve, [t]arget another namespace, [s]kip
(with an optional reason), [x] supersede the fact it contradicts, [n]ext, [q]uit. Approvals
run as Dagster runs of `vault_promotion_job` on the UI's instance (so each shows in the UI
with its lineage); a skip is a database write. It reads answers line by line from stdin, so
it can be scripted: `printf 'a\\ns\\nnot durable\\nq\\n' | memory-platform review`.
End of input quits.
"""

import sys
from collections import Counter
from typing import Annotated, Optional

import typer

from memory_platform.cli.common import actor, database, err, out, run


def _ask(out, prompt: str) -> str | None:
    """One answer from stdin, stripped; None at end of input."""
    out.print(prompt, end="", highlight=False, markup=False)
    out.file.flush()
    line = sys.stdin.readline()
    if not line:
        out.print()
        return None
    return line.strip()


def _short(text: str, width: int = 200) -> str:
    text = " ".join(str(text).split())
    return text[:width] + ("…" if len(text) > width else "")


def _days(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.1f} days" if days >= 1 else f"{seconds / 3600:.1f} hours"


def show_entry(out, entry: dict, position: str) -> None:
    """Print one pending entry: what it says, why, and what the vault already holds."""
    p = entry["provenance"]
    lines = [
        f"{position} #{entry['id']} {entry['namespace']} -> {entry['target_namespace']}  "
        f"score {entry['score'] if entry['score'] is not None else '-'}  [{entry['category']}]",
        f"  {entry['text']}",
    ]
    if entry["why"]:
        lines.append(f"  why: {_short(entry['why'])}")
    source = []
    if p["dream_run_id"]:
        source.append(f"dream run {p['dream_run_id']}")
    if p["source_event_ids"]:
        source.append("events " + ", ".join(str(i) for i in p["source_event_ids"]))
    if source:
        lines.append(f"  from: {'; '.join(source)}")
    verdict = entry["verdict"]
    if verdict:
        lines.append(f"  verdict: {verdict['verdict']} ({verdict['decided_by']}): "
                     f"{_short(verdict['reason'], 240)}")
    nearest = entry["nearest"]
    if nearest:
        lines.append(f"  nearest: #{nearest['id']} ({nearest['similarity']:.3f}) "
                     f"{_short(nearest['text'])}")
    else:
        lines.append(f"  nearest: nothing in {entry['target_namespace']} yet")
    old = entry["contradicts"]
    if old:
        state = "current" if old["current"] else (
            f"superseded by #{old['superseded_by']}" if old["superseded_by"] else
            f"not current ({old['status']}, {old['namespace']})")
        lines.append(f"  CONTRADICTS #{old['id']} ({state}): {_short(old['text'])}")
    for line in lines:
        out.print(line, highlight=False, markup=False, soft_wrap=True)


def _menu(entry: dict) -> str:
    options = "[a]pprove [e]dit [t]arget namespace [s]kip"
    if entry["contradicts"] and entry["contradicts"]["current"]:
        options += f" [x] supersede #{entry['contradicts']['id']}"
    return options + " [n]ext [q]uit > "


class _Session:
    """One review session: the Dagster instance is prepared once, on the first approval."""

    def __init__(self, db, settings, actor: str, out, err):
        self.db, self.settings, self.actor, self.out, self.err = db, settings, actor, out, err
        self.instance = None
        self.tally: Counter = Counter()

    def promote(self, memory_id: int, **decision) -> dict:
        from memory_platform import launch

        if self.instance is None:
            self.instance = launch.prepare_instance(self.settings)
        return launch.promote_via_dagster(self.instance, memory_id,
                                          {"actor": self.actor, **decision})

    def decide(self, entry: dict) -> str:
        """Ask until the entry is decided ('decided'), passed ('next') or the session ends
        ('quit')."""
        from memory_platform.vault import review

        while True:
            answer = _ask(self.out, _menu(entry))
            if answer is None or answer.lower() in ("q", "quit"):
                return "quit"
            choice = answer.lower()[:1]
            decision: dict = {}
            if choice == "n":
                self.tally["passed"] += 1
                return "next"
            if choice == "e":
                text = _ask(self.out, "new text (empty: back): ")
                if text is None:
                    return "quit"
                if not text:
                    continue
                decision = {"text": text}
            elif choice == "t":
                namespace = _ask(self.out, "approve into namespace (empty: back): ")
                if namespace is None:
                    return "quit"
                if not namespace:
                    continue
                decision = {"namespace": namespace}
            elif choice == "x":
                old = entry["contradicts"]
                if not (old and old["current"]):
                    self.err.print("nothing current to supersede here", highlight=False)
                    continue
                decision = {"action": "supersede", "old_memory_id": old["id"]}
            elif choice == "s":
                reason = _ask(self.out, "reason (optional): ")
                if reason is None:
                    return "quit"
                try:
                    review.skip(self.db, entry["id"], actor=self.actor, reason=reason or None)
                except review.ReviewConflict as exc:
                    self.conflict(exc)
                    return "decided"
                self.tally["skipped"] += 1
                self.out.print(f"skipped #{entry['id']}", highlight=False, markup=False)
                return "decided"
            elif choice != "a":
                self.err.print(f"unknown answer {answer!r}", highlight=False, markup=False)
                continue
            try:
                done = self.promote(entry["id"], **decision)
            except review.ReviewConflict as exc:
                self.conflict(exc)
                return "decided"
            except ValueError as exc:  # a bad namespace, an empty edit: ask again
                self.err.print(f"error: {exc}", highlight=False, markup=False)
                continue
            verb = "superseded" if done["action"] == "supersede" else "approved"
            self.tally[verb] += 1
            edited = " (edited)" if done["edited"] else ""
            what = (f"#{entry['id']}{edited} -> #{done['promoted_id']} in {done['namespace']}"
                    if done["created"] else
                    f"#{entry['id']} (already in {done['namespace']} as #{done['promoted_id']})")
            extra = f", #{done['superseded_id']} superseded" if done.get("superseded_id") else ""
            self.out.print(f"{verb} {what}{extra} (dagster run {done['run_id'][:8]})",
                           highlight=False, markup=False)
            return "decided"

    def conflict(self, exc) -> None:
        self.tally["conflicts"] += 1
        self.err.print(f"conflict: {exc}", highlight=False, markup=False)

    def walk(self, namespace: str) -> bool:
        """Every pending entry of a namespace, page by page; False when the person quit."""
        from memory_platform.vault import queue

        after, seen = 0, 0
        entries, total = queue.pending(self.db, namespace, after_id=after)
        if total:
            self.out.print(f"== {namespace}: {total} pending ==", highlight=False,
                           markup=False)
        while entries:
            for entry in entries:
                seen += 1
                after = entry["id"]
                self.out.print()
                show_entry(self.out, entry, f"[{seen}/{total}]")
                if self.decide(entry) == "quit":
                    return False
            entries, _ = queue.pending(self.db, namespace, after_id=after)
        return True


def review_command(
    namespace: Annotated[Optional[str], typer.Option(
        help="Only this namespace (a primary one, or one shadow such as work__ideas).")] = None,
) -> None:
    """Approve, edit, skip or supersede staged memories.

    Walk the memories waiting for review and approve, edit, skip or supersede each."""
    def body():
        from memory_platform.settings import load_settings
        from memory_platform.vault import queue

        db = database()
        if namespace is not None:
            namespaces = [namespace]
        else:
            waiting = queue.overview(db)
            for entry in waiting:
                out.print(f"{entry['namespace']}: {entry['pending']} pending, oldest "
                          f"{_days(entry['age_seconds'])}", highlight=False, markup=False)
            namespaces = [entry["namespace"] for entry in waiting]
        if not namespaces:
            out.print("nothing waits for review", highlight=False)
            return
        session = _Session(db, load_settings(), actor(), out, err)
        try:
            for name in namespaces:
                if not session.walk(name):
                    break
        except KeyboardInterrupt:  # Ctrl-C ends the session; decisions made are kept
            out.print()
        finally:
            if session.instance is not None:
                session.instance.dispose()
        counts = ", ".join(f"{k} {session.tally[k]}" for k in
                           ("approved", "superseded", "skipped", "passed", "conflicts")
                           if session.tally[k])
        out.print(f"done: {counts or 'no decisions'}", highlight=False, markup=False)

    run(body)
