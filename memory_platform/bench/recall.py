"""recall benchmark: hook latency, the pack, the wiki and lint at 10k memories, and the
labelled personal-data / credential set.

(a) Hook latency: `memory-platform hook session-start` and `hook prompt` run as Claude Code
    runs them (a new process, the payload on stdin, stdout read), against a namespace of
    `size` memories: with the resident process (MEMORY_PLATFORM_RECALL_SERVER=auto, started
    before timing) and without it (=off: each call imports everything and packs with
    keyword relevance). p50/p95 over the calls.
(b) The pack service in process (vault/context.py): session start (index + project) and a
    prompt (hybrid relevance), p50/p95.
(c) The wiki of the namespace: first build, and a sync with nothing changed.
(d) Lint of the namespace (no LLM: the token rule, stale, orphans, near-duplicates).
(e) benchmarks/data/sensitive_cases.jsonl: precision and recall of privacy/personal.py per
    kind, and for credentials masking.py's hand-written patterns against detect-secrets
    (all plugins, and without its two entropy plugins), when installed.
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_platform.bench.common import machine, scratch_db, server_url, uptime
from memory_platform.store import Database
from memory_platform.store import memories as memory_store

NAMESPACE = "bench"
PROJECT = "/src/bench-api"
CASES = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "sensitive_cases.jsonl"
KINDS = ("email", "phone", "card", "iban", "government_id", "address")
Log = Callable[[str], None]

_SERVICES = ["billing", "search", "auth", "ingest", "reports", "gateway", "mailer", "scheduler",
             "exporter", "notifier", "catalog", "payments", "profiles", "uploads", "metrics"]
_FACTS = [
    "The {s} service runs on port {n}", "The {s} service stores its data in PostgreSQL {v}",
    "Deploys of the {s} service go out on {d}", "The {s} service is owned by team {t}",
    "We decided to cache {s} responses for {n} seconds", "The {s} service logs to /var/log/{s}",
    "The {s} service retries failed calls {k} times", "The {s} runbook lives at https://wiki.acme.dev/{s}",
    "Keep {s} error messages short and actionable", "The {s} service uses pytest with {k} workers",
]
_DAYS = ["Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays"]


def _pcts(ms: list[float]) -> dict:
    ordered = sorted(ms)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 1)

    return {"n": len(ms), "p50_ms": pct(50), "p95_ms": pct(95), "max_ms": round(max(ms), 1),
            "mean_ms": round(statistics.fmean(ms), 1)}


# --- (e) the labelled set ------------------------------------------------------------------


def _score(tp: int, fp: int, fn: int) -> dict:
    return {"tp": tp, "fp": fp, "fn": fn,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None}


def _detect_secrets(entropy: bool):
    """A credential test from detect-secrets (None when not installed)."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings, transient_settings
    except ImportError:
        return None
    if entropy:
        def test(text: str) -> bool:
            with default_settings():
                return any(True for line in text.splitlines() for _ in scan_line(line))
        return test
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    names = sorted(cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()
                   if "HighEntropy" not in cls.__name__)
    config = {"plugins_used": [{"name": n} for n in names]}

    def test(text: str) -> bool:
        with transient_settings(config):
            return any(True for line in text.splitlines() for _ in scan_line(line))
    return test


def labelled(log: Log, path: Path = CASES) -> dict:
    from memory_platform.privacy.masking import looks_like_secret
    from memory_platform.privacy.personal import detect

    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    result: dict = {"cases": len(cases), "positive": sum(1 for c in cases if c["kinds"]),
                    "look_alikes_and_plain": sum(1 for c in cases if not c["kinds"])}
    per_kind = {k: [0, 0, 0] for k in KINDS}
    any_personal = [0, 0, 0]
    misses, false_alarms = [], []
    began = time.perf_counter()
    for c in cases:
        truth = set(c["kinds"]) - {"credential"}
        found = {f.kind for f in detect(c["text"])}
        for k in KINDS:
            per_kind[k][0] += k in found and k in truth
            per_kind[k][1] += k in found and k not in truth
            per_kind[k][2] += k in truth and k not in found
        any_personal[0] += bool(found) and bool(truth)
        any_personal[1] += bool(found) and not truth
        any_personal[2] += bool(truth) and not found
        if truth - found:
            misses.append(c["text"])
        if found - truth:
            false_alarms.append(c["text"])
    result["personal_ms_per_case"] = round(1000 * (time.perf_counter() - began) / len(cases), 3)
    result["personal"] = {"any": _score(*any_personal),
                          **{k: _score(*v) for k, v in per_kind.items()},
                          "missed": misses, "false_alarms": false_alarms}
    detectors = {"hand_patterns": looks_like_secret}
    for name, entropy in (("detect_secrets", True), ("detect_secrets_no_entropy", False)):
        test = _detect_secrets(entropy)
        if test is not None:
            detectors[name] = test
    if len(detectors) == 1:
        result["detect_secrets"] = "not installed"
    else:  # the library as a second opinion beside the patterns
        pattern_plugins = detectors["detect_secrets_no_entropy"]
        detectors["hand_patterns_or_detect_secrets_no_entropy"] = \
            lambda text: looks_like_secret(text) or pattern_plugins(text)
    credentials = {}
    for name, test in detectors.items():
        counts = [0, 0, 0]
        wrong = []
        began = time.perf_counter()
        for c in cases:
            truth, found = "credential" in c["kinds"], bool(test(c["text"]))
            counts[0] += truth and found
            counts[1] += found and not truth
            counts[2] += truth and not found
            if truth != found:
                wrong.append(c["text"])
        credentials[name] = {**_score(*counts), "wrong": wrong[:40],
                             "ms_per_case": round(1000 * (time.perf_counter() - began)
                                                  / len(cases), 3)}
    result["credentials"] = credentials
    p = result["personal"]["any"]
    log(f"  personal data: precision {p['precision']}, recall {p['recall']} on {len(cases)} "
        f"cases")
    for name, s in credentials.items():
        log(f"  credentials, {name}: precision {s['precision']}, recall {s['recall']}")
    return result


# --- (a)-(d) at scale ----------------------------------------------------------------------


def seed(db: Database, size: int, log: Log) -> None:
    """`size` memories in NAMESPACE (categories and topics by the rules, dates spread over
    two years), plus a few standing facts in `personal`."""
    from memory_platform.vault.topics import classify

    rng = random.Random(7)
    start = datetime.now(UTC) - timedelta(days=730)
    began = time.perf_counter()
    with db.connect() as conn, conn.transaction():
        for i in range(size):
            s = _SERVICES[i % len(_SERVICES)] + (f"-{i // len(_SERVICES)}" if i >= 15 else "")
            text = rng.choice(_FACTS).format(s=s, n=rng.randint(1000, 65000),
                                             v=rng.choice(["14", "15", "16"]),
                                             d=rng.choice(_DAYS), t=f"t{rng.randint(1, 40)}",
                                             k=rng.randint(2, 9))
            label = classify(text)
            memory_store.add_memory(conn, namespace=NAMESPACE, text=text,
                                    category=label.category, topic=label.topic, actor="bench",
                                    valid_from=start + timedelta(minutes=105 * i))
        for text in ("Keep answers short", "I prefer pytest over unittest", "Allergic to nuts"):
            label = classify(text)
            memory_store.add_memory(conn, namespace="personal", text=text,
                                    category=label.category, topic=label.topic, actor="bench")
    log(f"  {size:,} memories written in {time.perf_counter() - began:.1f} s")


def _payload(event: str, session: str, prompt: str | None = None) -> str:
    body = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": PROJECT,
            "hook_event_name": event}
    if prompt is not None:
        body["prompt"] = prompt
    else:
        body["source"] = "startup"
    return json.dumps(body)


PROMPTS = ["which port does the billing service run on?",
           "where do the payments service logs go?",
           "how often does the auth service retry failed calls?",
           "who owns the scheduler service, and when does it deploy?",
           "what postgres version does the catalog service use?"]


def hooks(calls: int, log: Log) -> dict:
    """Hook latency through the real command, with and without the resident process."""
    from memory_platform.recall import server

    cli = str(Path(sys.executable).parent / "memory-platform")

    def timed(command: str, stdin: str, env: dict) -> tuple[float, str]:
        t0 = time.perf_counter()
        done = subprocess.run([cli, "hook", command], input=stdin, capture_output=True,
                              text=True, env=env, timeout=300)
        ms = 1000 * (time.perf_counter() - t0)
        if done.returncode != 0:
            raise RuntimeError(f"hook {command} exited {done.returncode}: {done.stderr}")
        return ms, done.stdout

    result: dict = {}
    env = {**os.environ, "MEMORY_PLATFORM_RECALL_SERVER": "auto"}
    resident = subprocess.Popen([sys.executable, "-m", "memory_platform.recall.server"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        socket = Path(os.environ["MEMORY_PLATFORM_HOME"]) / "run" / "recall.sock"
        t0 = time.perf_counter()
        while not socket.exists():
            if resident.poll() is not None or time.perf_counter() - t0 > 300:
                raise RuntimeError("the resident process did not start")
            time.sleep(0.1)
        result["resident_start_s"] = round(time.perf_counter() - t0, 1)
        for label, command, make in (
                ("session_start", "session-start",
                 lambda i: _payload("SessionStart", f"b-{i}")),
                ("prompt", "prompt",
                 lambda i: _payload("UserPromptSubmit", f"p-{i}", PROMPTS[i % len(PROMPTS)]))):
            ms, outputs = [], 0
            for i in range(calls):
                took, out = timed(command, make(i), env)
                ms.append(took)
                outputs += bool(out)
            result[f"resident_{label}"] = {**_pcts(ms), "with_context": outputs}
            log(f"  hook {command}, resident process: p50 {result[f'resident_{label}']['p50_ms']}"
                f" ms, p95 {result[f'resident_{label}']['p95_ms']} ms ({outputs}/{calls} "
                f"added context)")
        # Where the prompt hook's time goes: the resident process's answer alone (a socket
        # round trip from this process), and a bare interpreter start under the same load.
        from memory_platform.recall.hook_client import ask

        home = Path(os.environ["MEMORY_PLATFORM_HOME"])
        answer_ms = []
        for i in range(calls):
            raw = _payload("UserPromptSubmit", f"r-{i}", PROMPTS[i % len(PROMPTS)]).encode()
            t = time.perf_counter()
            ask(home, "UserPromptSubmit", raw, 30.0)
            answer_ms.append(1000 * (time.perf_counter() - t))
        result["resident_prompt_answer_only"] = _pcts(answer_ms)
        start_ms = []
        for _ in range(calls):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            start_ms.append(1000 * (time.perf_counter() - t))
        result["python_start_only"] = _pcts(start_ms)
        log(f"  of which the resident process's answer: p50 "
            f"{result['resident_prompt_answer_only']['p50_ms']} ms, p95 "
            f"{result['resident_prompt_answer_only']['p95_ms']} ms; a bare `python -c pass`: "
            f"p50 {result['python_start_only']['p50_ms']} ms, p95 "
            f"{result['python_start_only']['p95_ms']} ms")
    finally:
        server.stop()
        resident.wait(60)
    # The time the in-process path takes, not when its budget would cut it off (3.5 s for
    # the prompt hook: on a loaded machine the imports alone can take longer).
    env = {**os.environ, "MEMORY_PLATFORM_RECALL_SERVER": "off",
           "MEMORY_PLATFORM_PROMPT_HOOK_SECONDS": "300",
           "MEMORY_PLATFORM_SESSION_HOOK_SECONDS": "300"}
    for label, command, make in (
            ("session_start", "session-start", lambda i: _payload("SessionStart", f"c-{i}")),
            ("prompt", "prompt",
             lambda i: _payload("UserPromptSubmit", f"q-{i}", PROMPTS[i % len(PROMPTS)]))):
        ms = [timed(command, make(i), env)[0] for i in range(max(5, calls // 4))]
        result[f"in_process_{label}"] = _pcts(ms)
        log(f"  hook {command}, no resident process: p50 "
            f"{result[f'in_process_{label}']['p50_ms']} ms, p95 "
            f"{result[f'in_process_{label}']['p95_ms']} ms")
    return result


def at_scale(db: Database, size: int, calls: int, log: Log) -> dict:
    from memory_platform.recall import intake, lint
    from memory_platform.vault.context import context
    from memory_platform.vault.memories import embed_missing_memories, vault_embedder
    from memory_platform.vault.tokens import Scope

    seed(db, size, log)
    embedder = vault_embedder()
    t0 = time.perf_counter()
    embedded = embed_missing_memories(db, embedder)
    log(f"  embedded {embedded['embedded']:,} memories in {time.perf_counter() - t0:.1f} s")
    out: dict = {"memories": size}
    scope = Scope.everything()
    for label, kwargs in (("pack_session_start", {"project": PROJECT}),
                          ("pack_prompt", {"query": PROMPTS[0], "index": False,
                                           "min_similarity": 0.4, "max_memories": 5})):
        ms = []
        for i in range(calls + 1):
            if "query" in kwargs:
                kwargs = {**kwargs, "query": PROMPTS[i % len(PROMPTS)]}
            t = time.perf_counter()
            pack = context(db, scope, namespaces=[NAMESPACE, "personal"], embedder=embedder,
                           **kwargs)
            ms.append(1000 * (time.perf_counter() - t))
        out[label] = {**_pcts(ms[1:]), "memories_in_last_pack": len(pack["memory_ids"]),
                      "tokens_in_last_pack": pack["tokens_used"]}
        log(f"  {label}: p50 {out[label]['p50_ms']} ms, p95 {out[label]['p95_ms']} ms")
    t = time.perf_counter()
    first = intake.sync(db, NAMESPACE, embedder=embedder)
    out["wiki_first_build_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    intake.sync(db, NAMESPACE, embedder=embedder)
    out["wiki_unchanged_sync_s"] = round(time.perf_counter() - t, 2)
    out["wiki_files"] = first["build"]["written"]
    log(f"  wiki: first build {out['wiki_first_build_s']} s ({out['wiki_files']} files), "
        f"unchanged sync {out['wiki_unchanged_sync_s']} s")
    t = time.perf_counter()
    report = lint.lint_namespace(db, NAMESPACE, embedder=embedder)
    out["lint_s"] = round(time.perf_counter() - t, 2)
    out["lint_findings"] = report.found
    log(f"  lint: {out['lint_s']} s, findings {report.found}")
    return out


PARTS = ("labelled", "scale", "hooks")


def _keep_other_parts(out: Path, report: dict) -> dict:
    """`report` with the figures of the parts it lacks kept from an earlier `out`: re-measuring
    one part does not erase the others. `parts_measured` dates each part, with the load
    (the earlier run's header for a file written before parts were dated)."""
    earlier = json.loads(out.read_text()) if out.exists() else {}
    for part in (p for p in PARTS if p in earlier and p not in report):
        report[part] = earlier[part]
        report["parts_measured"][part] = earlier.get("parts_measured", {}).get(part) or {
            "measured_at": earlier["measured_at"], **{
                k: earlier["machine"][k] for k in ("uptime_at_start", "uptime_at_end")}}
    report["parts_measured"] = {p: report["parts_measured"][p] for p in PARTS
                                if p in report["parts_measured"]}
    return report


def run(out: Path, *, size: int = 10_000, calls: int = 40, parts: tuple[str, ...] = PARTS,
        log: Log = print) -> dict:
    """The parts asked for, on a scratch database and home; print, write JSON (the figures
    of the parts not asked for are kept from an earlier `out`)."""
    unknown = set(parts) - set(PARTS)
    if unknown or not parts:
        raise ValueError(f"unknown part(s) {', '.join(sorted(unknown)) or '(none given)'}; "
                         f"use any of {', '.join(PARTS)}")
    report: dict = {"benchmark": "recall",
                    "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    # shared, loaded machine: other work slows every figure
                    "machine": {**machine(), "uptime_at_start": uptime()}}
    if "labelled" in parts:
        log("labelled personal-data / credential set:")
        report["labelled"] = labelled(log)
    if {"scale", "hooks"} & set(parts):
        keys = ("MEMORY_PLATFORM_HOME", "MEMORY_PLATFORM_DATABASE_URL")
        saved = {k: os.environ.get(k) for k in keys}
        with tempfile.TemporaryDirectory(prefix="mp-bench-recall-") as tmp:
            admin_url = server_url(Path(tmp))
            try:
                with scratch_db(admin_url, "recall") as db:
                    home = Path(tmp) / "home"
                    home.mkdir()
                    (home / "routing.toml").write_text(
                        f'default = "personal"\n[[rules]]\nproject = "/src/bench*"\n'
                        f'namespace = "{NAMESPACE}"\n')
                    os.environ.update({"MEMORY_PLATFORM_HOME": str(home),
                                       "MEMORY_PLATFORM_DATABASE_URL": db.url()})
                    log(f"{size:,} memories:")
                    report["scale"] = at_scale(db, size, calls, log)
                    if "hooks" in parts:
                        log("hooks, as Claude Code runs them:")
                        report["hooks"] = hooks(calls, log)
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
    report["machine"]["uptime_at_end"] = uptime()
    # the hooks are timed on the scale part's namespace: asking for them measures both
    report["parts_measured"] = {p: {"measured_at": report["measured_at"], **{
        k: report["machine"][k] for k in ("uptime_at_start", "uptime_at_end")}}
        for p in PARTS if p in report}
    report = _keep_other_parts(out, report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"\nwritten to {out}")
    return report
