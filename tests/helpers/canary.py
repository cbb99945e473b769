"""The canaries of the standing sweep (tests/test_canary_sweep.py), planted in a real
database and a real $MEMORY_PLATFORM_HOME, and the policy saying which of them a caller may
see.

Planted:
- credentials in cairn turns of a `work` session (an AWS key id, a GitHub token, and a
  password written as prose) and of a `personal` one;
- personal data (an e-mail address, a phone number) in a `work` memory, which the store marks
  sensitive, and in a turn of the `personal` session;
- `personal` memories, a shadow entry, a lint finding and an orchard project, all carrying
  PERSONAL_MARK, as is every turn of the `personal` session;
- a file outside every root, carrying OUTSIDE_MARK, reachable only through symlinks: one in
  the curator's repository of `work`, one in `work`'s wiki topics (taken in by a wiki sync
  before the sweep, so a leak into the vault would show on every face after it).

Policy (agreed with the lead, issue 20): credentials and the outside file never appear
unmasked, to anyone; PERSONAL_MARK never reaches a caller scoped to `work`; the personal
data of the sensitive memory reaches no agent, no MCP client, no hook, no prompt and no
wiki file, and a person or the admin only on the review pages and their API, which show it
on purpose (with a masked copy beside it, vault/queue.py).
"""

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from helpers.curator import git
from helpers.transcripts import cc_record
from memory_platform.ingest import importer as ingest
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as recall_store
from memory_platform.vault import tokens

ADMIN = "canary-admin-token"
DAY = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
WORK_CWD = "/home/me/src/work-api"
DIARY_CWD = "/home/me/diary"

PERSONAL_MARK = "quetzalcanary"  # in everything of `personal`
OUTSIDE_MARK = "outsidecanary"  # in the file outside every root
AWS_KEY = "AKIA" + "CANARYKEY0123456"
GITHUB_TOKEN = "ghp_" + "canaryabcdefghijklmnopqrstuvwxyz0123"
PROSE_PASSWORD = "hunter2"
CREDENTIALS = (AWS_KEY, GITHUB_TOKEN, PROSE_PASSWORD)
# personal data of a sensitive `work` memory, and of a turn of `personal`
MEMORY_EMAIL = "canary.oncall@example.org"
MEMORY_PHONE = "+1 415 555 0147"
TURN_EMAIL = "canary.diary@example.org"
SENSITIVE_TEXT = f"the on-call contact is {MEMORY_EMAIL}, phone {MEMORY_PHONE}"

WORK_TURNS = [
    "we should move the work api to port 8081",
    f"deploy with the aws key {AWS_KEY} and github {GITHUB_TOKEN}",
    f"the staging database password is {PROSE_PASSWORD}",
    "the work api now listens on 8081",
]
DIARY_TURNS = [
    f"my {PERSONAL_MARK} diary: mail {TURN_EMAIL} about the dentist in March",
    f"noted. {PERSONAL_MARK}: the bank password is {PROSE_PASSWORD}, aws {AWS_KEY}",
]


@dataclass
class Canaries:
    home: Path
    repo: Path
    outside: Path
    turns: list[int]  # work turns, then diary turns
    work_memory: int
    sensitive_memory: int
    personal_memory: int
    work_entry: int
    personal_entry: int
    work_finding: int
    personal_finding: int
    personal_project: int
    person: str  # work tokens
    agent: str
    planted: dict = field(default_factory=dict)
    curator_run: int = 0  # the run the prompt sweep's curator left (sweep_prompts)

    @property
    def diary_turns(self) -> list[int]:
        return self.turns[len(WORK_TURNS):]


def _session(path: Path, session: str, cwd: str, texts: list[str], start: datetime) -> None:
    lines, parent = [], None
    for i, text in enumerate(texts):
        rec = cc_record(i, session, start + timedelta(minutes=i),
                        "user" if i % 2 == 0 else "assistant", text=text, parent=parent,
                        cwd=cwd)
        parent = rec["uuid"]
        lines.append(json.dumps(rec))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _repo(root: Path, outside: Path) -> Path:
    """`work`'s repository: a README, and a symlink in it to the file outside."""
    repo = root / "work-api"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# work api\n\nThe api listens on port 8081.\n")
    (repo / "notes.md").symlink_to(outside)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the work api")
    return repo


def plant(db, home: Path, tmp_path: Path) -> Canaries:
    outside = tmp_path / "elsewhere" / "private.md"
    outside.parent.mkdir()
    outside.write_text(f"- {OUTSIDE_MARK}: the file outside every root\n", encoding="utf-8")
    repo = _repo(tmp_path, outside)
    # The default namespace follows a session into every project (recall/hooks.py): it is
    # `me` here, so `personal` is a namespace like any other, routed only from the diary.
    (home / "routing.toml").write_text(
        'default = "me"\n'
        f'[[rules]]\nproject = "{WORK_CWD}*"\nnamespace = "work"\n'
        f'[[rules]]\nproject = "{DIARY_CWD}*"\nnamespace = "personal"\n'
        f'[repos]\nwork = "{repo}"\n', encoding="utf-8")

    exports = tmp_path / "cc"
    _session(exports / "-home-me-src-work-api" / "w.jsonl", "s-work", WORK_CWD, WORK_TURNS, DAY)
    _session(exports / "-home-me-diary" / "d.jsonl", "s-diary", DIARY_CWD, DIARY_TURNS,
             DAY + timedelta(hours=1))
    report = ingest.import_path(db, "claude-code", exports)
    assert report.errors == [] and report.events_new == len(WORK_TURNS) + len(DIARY_TURNS)

    with db.connect() as conn:
        turns = [r[0] for r in conn.execute("SELECT id FROM events ORDER BY occurred_at, id")]
        add = memory_store.add_memory
        work_memory, _ = add(conn, namespace="work", text="the work api listens on port 8081",
                             actor="test")
        sensitive_memory, _ = add(conn, namespace="work", text=SENSITIVE_TEXT, actor="test")
        personal_memory, _ = add(conn, namespace="personal", actor="test",
                                 text=f"{PERSONAL_MARK}: dentist every March")
        work_entry, _ = add(conn, namespace="work__ideas", text="the work api moved to 8081",
                            source="agent", review="pending", actor="test",
                            source_event_ids=turns[:len(WORK_TURNS)])
        personal_entry, _ = add(conn, namespace="personal__ideas", source="agent",
                                text=f"{PERSONAL_MARK} diary is private", review="pending",
                                actor="test", source_event_ids=turns[len(WORK_TURNS):])
        sensitive = conn.execute("SELECT sensitive FROM memories WHERE id = %s",
                                 (sensitive_memory,)).fetchone()[0]
        assert sensitive, "the store marks personal data sensitive (the canary relies on it)"
        findings = [recall_store.insert_finding(
            conn, namespace=ns, kind="stale", memory_ids=[mid],
            evidence={"reason": "planted by the canary sweep",
                      "memories": [{"id": mid, "text": text}]},
            fingerprint=f"canary-{ns}", run_id=None)
            for ns, mid, text in (
                ("work", work_memory, "the work api listens on port 8081"),
                ("personal", personal_memory, f"{PERSONAL_MARK}: dentist every March"))]
    from memory_platform.orchard import projects
    from memory_platform.vault.tokens import Scope

    everything = Scope.everything()
    projects.add(db, everything, name="work-api", namespace="work", actor="test",
                 cairn_projects=[WORK_CWD], blockers=["password"])
    personal_project = projects.add(db, everything, name=f"{PERSONAL_MARK}-garden",
                                    namespace="personal", actor="test",
                                    cairn_projects=[DIARY_CWD], blockers=["password"])["id"]
    _, person = tokens.create(db, ["work"], name="canary-person", kind="person")
    _, agent = tokens.create(db, ["work"], name="canary-agent", kind="agent")
    canaries = Canaries(home, repo, outside, turns, work_memory, sensitive_memory,
                        personal_memory, work_entry, personal_entry, *findings,
                        personal_project, person, agent)
    _wiki(db, home, outside)
    canaries.planted = {
        "credentials": len(CREDENTIALS) * 2,  # in a work turn and in a personal one
        "personal_data": 3,  # e-mail and phone of a sensitive memory, an e-mail in a turn
        "out_of_scope": 6,  # memory, shadow entry, finding, project, conversation, turn PII
        "outside_files": 2,  # through the curator's repository and through the wiki
    }
    return canaries


def _wiki(db, home: Path, outside: Path) -> None:
    """Build `work`'s wiki, put a symlink to the outside file among its topics, and sync
    (what the wiki sensor does): nothing of it may enter the vault."""
    from memory_platform.recall import intake

    intake.sync(db, "work", home=home)
    topics = home / "wiki" / "work" / "topics"
    topics.mkdir(parents=True, exist_ok=True)
    (topics / "leak.md").symlink_to(outside)
    intake.sync(db, "work", home=home)


# --- the policy ------------------------------------------------------------------------------

NEVER = {**{c: "credential" for c in CREDENTIALS}, OUTSIDE_MARK: "file outside the root"}
SCOPED_OUT = {PERSONAL_MARK: "personal namespace", TURN_EMAIL: "personal conversation"}
SENSITIVE = {MEMORY_EMAIL: "sensitive e-mail", MEMORY_PHONE: "sensitive phone",
             "415 555 0147": "sensitive phone"}


# What the positive controls look for: a masked value, and a hook's context.
SHOWN = ("[secret masked]", "[email masked]", "[phone masked]", "additionalContext")


def forbidden(*, scoped: bool, sees_sensitive: bool) -> dict[str, str]:
    """The canaries a caller may not see: `scoped` to `work`, or seeing everything; and
    whether it may see the personal data of its own sensitive memories."""
    out = dict(NEVER)
    if scoped:
        out.update(SCOPED_OUT)
    if not sees_sensitive:
        out.update(SENSITIVE)
    return out


@dataclass
class Sweep:
    """What the sweep did: calls per face, and every leak found (never raised at once, so a
    failing run lists all of them)."""

    calls: dict = field(default_factory=dict)
    leaks: list = field(default_factory=list)
    seen: set = field(default_factory=set)  # positive controls: canaries a caller did see
    slowest: list = field(default_factory=list)  # (seconds, call) of the slower faces
    routes: set = field(default_factory=set)  # every "METHOD /path" called
    answered: set = field(default_factory=set)  # those that answered one caller below 400

    def check(self, face: str, where: str, text: str, banned: dict[str, str]) -> None:
        self.calls[face] = self.calls.get(face, 0) + 1
        for canary, kind in banned.items():
            if canary in text:
                at = text.index(canary)
                self.leaks.append(f"{face} {where}: {kind} {canary!r} in "
                                  f"...{text[max(0, at - 80):at + 40]!r}...")
        for canary in (*CREDENTIALS, PERSONAL_MARK, MEMORY_EMAIL, *SHOWN):
            if canary in text:
                self.seen.add((face, canary))

