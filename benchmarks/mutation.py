"""Mutation check of the rule modules (issue 11): mutmut changes one thing at a time in the code
that holds a rule (masking, the dedup gate's significant tokens, token scope, the dream's
score threshold and prompt, the import's resume rule, the curator's breaker and verdict
validation) and runs the tests that execute it; a
mutant no test notices ("survived") is a one-line bug the suite would let through.

    python benchmarks/mutation.py                 # writes benchmarks/results/mutation.json
    python benchmarks/mutation.py --max-children 2 --keep
    python benchmarks/mutation.py --only "curator/breaker.py" --only "curator/verdict.py (validation)"
                                                  # those modules; the others' rows are kept

Which files are mutated and which tests may run: [tool.mutmut] in pyproject.toml (mutmut
runs, per mutant, only the tests that executed the mutated function). Which functions are
checked: RULES below, the functions that hold each rule; the rest of those files (the
dream's day loop and date rewriting, the importer's batch loop, token storage) is left out
to keep the run near half an hour on two cores. A dedicated embedded PostgreSQL serves the
database tests, so a mutant's test run does not start a server of its own. Run from the
repository root with the project's virtualenv; mutants are written to ./mutants/
(git-ignored), removed first unless --keep.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "mutation.json"
SAMPLES = REPO / "tests" / "data" / "samples"  # the copied tests/ in mutants/ read these

# module (as reported) -> mutmut name globs of the functions holding its rule
RULES = {
    "privacy/masking.py": ["memory_platform.privacy.masking.*"],
    "vault/significant.py": ["memory_platform.vault.significant.*"],
    "vault/tokens.py (Scope)": [
        "memory_platform.vault.tokens.xǁScopeǁ*",
        "memory_platform.vault.tokens.x_parse_namespaces__*",
        "memory_platform.vault.tokens.x_hash_secret__*",
    ],
    "dream/propose.py (threshold, prompt)": [
        f"memory_platform.dream.propose.x_{name}__*"
        for name in ("_candidates", "build_prompt", "prepare_turns", "contains_secret",
                     "strip_injected", "chunk_turns")
    ],
    "ingest/importer.py (resume)": ["memory_platform.ingest.importer.x__plan__*"],
    "curator/breaker.py": ["memory_platform.curator.breaker.*"],
    "curator/verdict.py (validation)": [
        f"memory_platform.curator.verdict.x_{name}__*"
        for name in ("problems", "_fence_opens", "_evidence_problems", "is_decision_record")
    ],
}
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}


def _mutmut() -> Path:
    return Path(sys.executable).parent / "mutmut"


def _function(name: str) -> str:
    """'memory_platform.vault.tokens.xǁScopeǁpermits__mutmut_3' -> 'vault.tokens.Scope.permits'
    (mutmut names a function's mutants x_<name>, a method's xǁ<class>ǁ<name>)."""
    module, _, mangled = name.split("__mutmut_")[0].rpartition(".")
    if mangled.startswith("xǁ"):
        function = mangled.removeprefix("xǁ").replace("ǁ", ".")
    else:
        function = mangled.removeprefix("x_")
    return f"{module.removeprefix('memory_platform.')}.{function}"


def _results(env: dict) -> dict[str, str]:
    out = subprocess.run([str(_mutmut()), "results", "--all", "true"], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="reuse ./mutants (cached results)")
    parser.add_argument("--only", action="append", choices=sorted(RULES), default=None,
                        help="check these modules only; the report keeps the others' rows")
    args = parser.parse_args()
    rules = {m: RULES[m] for m in args.only} if args.only else RULES
    if not args.keep:
        shutil.rmtree(REPO / "mutants", ignore_errors=True)

    import fnmatch

    import pgserver

    pgdata = tempfile.mkdtemp(prefix="mp-mutation-pg-")
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # mutants/ must win
    env["MEMORY_PLATFORM_TEST_DATABASE_URL"] = server.get_uri()
    env.setdefault("MEMORY_PLATFORM_SAMPLES", str(SAMPLES))
    globs = [g for patterns in rules.values() for g in patterns]
    load_start, started = os.getloadavg(), time.monotonic()
    run = subprocess.run([str(_mutmut()), "run", "--max-children", str(args.max_children),
                          *globs], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    seconds, load_end = time.monotonic() - started, os.getloadavg()
    if run.returncode != 0:
        sys.exit(f"mutmut run failed ({run.returncode}):\n{run.stderr[-4000:]}")
    results = _results(env)
    server.cleanup()

    earlier = json.loads(OUT.read_text()) if args.only and OUT.exists() else {}
    run_keys = ("measured_at", "load_average_at_start", "load_average_at_end", "seconds")
    # Each row says which run measured it (a run with --only keeps the others' rows).
    modules = {m: {**{k: earlier.get(k) for k in run_keys}, **row}
               for m, row in earlier.get("modules", {}).items() if m not in rules}
    this_run = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "load_average_at_start": [round(x, 2) for x in load_start],
                "load_average_at_end": [round(x, 2) for x in load_end],
                "seconds": round(seconds, 1)}
    for module, patterns in rules.items():
        mine = {n: s for n, s in results.items()
                if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
        counts = Counter(mine.values())
        killed = sum(counts[s] for s in DETECTED)
        survived = counts["survived"]
        by_function = defaultdict(Counter)
        for name, status in mine.items():
            by_function[_function(name)][status] += 1
        modules[module] = {
            "killed": killed, "survived": survived, "total": len(mine),
            "no_tests": counts["no tests"], "statuses": dict(counts),
            "score": round(killed / (killed + survived), 3) if killed + survived else None,
            "survivors": sorted(n for n, s in mine.items() if s == "survived"),
            "by_function": {f: dict(c) for f, c in sorted(by_function.items())},
            **this_run,
        }
    report = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "tool": f"mutmut {version('mutmut')}",
        "max_children": args.max_children,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in load_start],
        "load_average_at_end": [round(x, 2) for x in load_end],
        "seconds": round(seconds, 1),
        "modules": modules,
    }
    OUT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    for module, m in modules.items():
        if module not in rules:
            continue
        print(f"{module:40} killed {m['killed']:4} survived {m['survived']:3} "
              f"total {m['total']:4} score {m['score']}")
    print(f"{seconds:.0f} s, load {load_start[0]:.1f} -> {load_end[0]:.1f}; {OUT}")


if __name__ == "__main__":
    main()
