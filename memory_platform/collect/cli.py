"""`memory-platform collect`: the collector's command, reached from cli/__init__.py before
typer or anything heavy is imported (a laptop's collector needs no database, Dagster or
model).

    memory-platform collect --to https://memory.example:8000 [--once] [--machine NAME]
    memory-platform collect --status [--json]

The token (from `memory-platform token create --kind collector --machine NAME` on the
server) is read from MEMORY_PLATFORM_COLLECTOR_TOKEN or --token-file, never from the
command line (it would show in `ps`)."""

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from memory_platform.collect import status as collector_status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-platform collect",
        description="Ship this machine's new AI sessions to a central memory-platform.")
    parser.add_argument("--to", metavar="URL", help="the central server (memory-platform serve)")
    parser.add_argument("--once", action="store_true",
                        help="one round, then exit (cron, a SessionEnd hook)")
    parser.add_argument("--status", action="store_true", help="the last round's status")
    parser.add_argument("--machine", help="this machine's name on the server (default: "
                        "HOME/machine.json's, the host name at first run)")
    parser.add_argument("--token-file", type=Path,
                        help="a file holding the collector token (else "
                             "MEMORY_PLATFORM_COLLECTOR_TOKEN)")
    parser.add_argument("--interval", type=float, default=30.0,
                        help="seconds between rounds in the foreground (default 30)")
    parser.add_argument("--spool-mb", type=int, default=None,
                        help="the spool's bound (default MEMORY_PLATFORM_COLLECTOR_SPOOL_MB, "
                             "256)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.status:  # the standard library only: a person's check, and cheap
        found = collector_status.status(collector_status.home())
        print(json.dumps(found, indent=2) if args.json else _status_text(found))
        return int(found.get("exit_code", 0)) if found else 0
    from memory_platform.collect import run
    try:
        from memory_platform.settings import load_settings

        settings = load_settings()
        if not args.to:
            raise ValueError("name the central server: --to URL")
        token = (args.token_file.read_text(encoding="utf-8").strip() if args.token_file
                 else settings.secret("collector_token"))
        spool_mb = args.spool_mb if args.spool_mb is not None else settings.collector_spool_mb
        if spool_mb < 1 or args.interval <= 0:
            raise ValueError("--spool-mb must be at least 1 and --interval positive")
        from memory_platform.collect.scan import watched_roots

        config = run.Config(server=args.to, home=settings.home, machine=args.machine,
                            token=token, spool_bytes=spool_mb << 20, interval_s=args.interval,
                            roots=watched_roots(settings))
        collector = run.Collector(config)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.once:
        code, summary = collector.once()
        print(json.dumps(summary, indent=2) if args.json else run.describe(code, summary))
        return code
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"collecting for {collector.machine} into {args.to} every {args.interval:g} s",
          flush=True)
    collector.forever(stop, report=lambda line: print(line, flush=True))
    return 0


def _status_text(found: dict) -> str:
    if not found:
        return "the collector has not run yet"
    lines = [f"machine {found.get('machine')} -> {found.get('server')}",
             f"last round {found.get('at')} (exit {found.get('exit_code')}), last push "
             f"{found.get('last_push_at') or 'never'}",
             f"spool: {found.get('spool_chunks')} chunk(s), {found.get('spool_bytes')} of "
             f"{found.get('spool_max_bytes')} bytes" + (" - FULL" if found.get("spool_full")
                                                         else "")]
    if found.get("last_error"):
        lines.append(f"last error: {found['last_error']}")
    return "\n".join(lines)
