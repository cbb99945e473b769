"""The dashboard's browser tests: a system Chromium driven headless by Playwright (never
`playwright install`: Debian's chromium, which .ci/run installs, or on macOS one installed by
hand, README), and the real app served by uvicorn in a thread on a free loopback port."""

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

# Where a Chromium is looked for after MEMORY_PLATFORM_TEST_CHROMIUM and `chromium` on PATH:
# Debian's, and the app `brew install --cask chromium` puts on macOS.
CHROMIUM_PLACES = ("/usr/bin/chromium", "/Applications/Chromium.app/Contents/MacOS/Chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium() -> Iterator:
    """A headless Chromium browser (Playwright's Browser), closed afterwards."""
    from playwright.sync_api import sync_playwright

    executable = chromium_executable()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            yield browser
        finally:
            browser.close()


def chromium_executable() -> str:
    named = os.environ.get("MEMORY_PLATFORM_TEST_CHROMIUM")
    if named:
        if not os.access(named, os.X_OK):
            raise RuntimeError(f"MEMORY_PLATFORM_TEST_CHROMIUM={named} is not an executable")
        return named
    found = shutil.which("chromium") or next(
        (p for p in CHROMIUM_PLACES if os.access(p, os.X_OK)), None)
    if not found:
        raise RuntimeError("no Chromium found: apt-get install -y chromium (Debian; .ci/run "
                           "does), brew install --cask chromium (macOS), or set "
                           "MEMORY_PLATFORM_TEST_CHROMIUM to a Chromium or Chrome binary")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(app) -> Iterator[str]:
    """`app` served on 127.0.0.1 until the block ends; yields its base URL. The app's review
    recorder is closed afterwards."""
    port = free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        app.state.review_recorder.close()
