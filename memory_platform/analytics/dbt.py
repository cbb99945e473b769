"""The dbt project (`dbt_project/` at the top of the repository): where it is, its manifest,
and the environment its profile reads.

The manifest (`dbt_project/target/manifest.json`) is what Dagster builds the marts' assets
and checks from. It is never downloaded or committed: `ensure_manifest` runs `dbt parse`
(which opens no database and needs no network) when it is missing or older than any file of
the project, so a fresh checkout, CI and an edited model all get a current one. Parsing
writes to a temporary target folder and moves the manifest into place in one rename, so two
processes preparing at once never read half a file.
"""

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory_platform.settings import Settings

PROJECT_DIR = Path(__file__).resolve().parents[2] / "dbt_project"
MANIFEST = PROJECT_DIR / "target" / "manifest.json"
# What profiles.yml and sources.yml read (env_var): set from settings.py for every run.
LAKE_VARIABLE = "DBT_MEMORY_LAKE"
WAREHOUSE_VARIABLE = "DBT_MEMORY_WAREHOUSE"
_PROJECT_FILES = ("dbt_project.yml", "profiles.yml")
_PROJECT_FOLDERS = ("models", "seeds", "tests", "macros")


class DbtProjectError(RuntimeError):
    """The dbt project could not be parsed; the message carries dbt's own output."""


def project_files() -> list[Path]:
    files = [PROJECT_DIR / name for name in _PROJECT_FILES]
    for folder in _PROJECT_FOLDERS:
        root = PROJECT_DIR / folder
        if root.exists():
            files += [p for p in root.rglob("*") if p.is_file()]
    return files


def manifest_is_current() -> bool:
    if not MANIFEST.exists():
        return False
    built = MANIFEST.stat().st_mtime
    return all(p.stat().st_mtime <= built for p in project_files())


def dbt_executable() -> str:
    """The `dbt` installed beside this Python (the project's environment), else PATH's."""
    beside = Path(sys.executable).with_name("dbt")
    return str(beside) if beside.exists() else "dbt"


def ensure_manifest(log=None) -> Path:
    """The manifest's path, after `dbt parse` if it is missing or stale."""
    if manifest_is_current():
        return MANIFEST
    if log:
        log(f"parsing the dbt project in {PROJECT_DIR} (dbt parse)…")
    MANIFEST.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=MANIFEST.parent, prefix="parse-") as tmp:
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
               "DBT_PARTIAL_PARSE": "false", "DBT_LOG_PATH": tmp}
        result = subprocess.run(
            [dbt_executable(), "parse", "--quiet", "--project-dir", str(PROJECT_DIR),
             "--profiles-dir", str(PROJECT_DIR), "--target-path", tmp],
            env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not (Path(tmp) / "manifest.json").exists():
            raise DbtProjectError(
                f"dbt parse failed in {PROJECT_DIR} (exit {result.returncode}): "
                f"{(result.stdout + result.stderr).strip()[-2000:]}")
        os.replace(Path(tmp) / "manifest.json", MANIFEST)
    return MANIFEST


def environment(settings: Settings) -> dict[str, str]:
    """The variables the dbt profile and sources read, from the project's settings."""
    return {LAKE_VARIABLE: str(settings.lake), WAREHOUSE_VARIABLE: str(settings.warehouse_file)}


@contextmanager
def dbt_environment(settings: Settings) -> Iterator[dict[str, str]]:
    """Set `environment(settings)` in this process while dbt runs (dagster-dbt hands the
    process environment to the dbt it starts), and put the previous values back after."""
    values = environment(settings)
    settings.warehouse_file.parent.mkdir(parents=True, exist_ok=True)
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield values
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

