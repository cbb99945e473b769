"""The loaded Dagster definitions, by key: nothing added, lost or renamed unnoticed.

tests/data/definitions_snapshot.json holds the keys of every asset, asset check, job,
schedule, sensor and resource, with each asset's group and each automation's target job.
A change to the Dagster layer that changes one of them shows here as a diff; regenerate
the file with `python tests/test_definitions_snapshot.py` and say why in the commit.
"""

import json
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).parent / "data" / "definitions_snapshot.json"


def definitions_keys() -> dict:
    from memory_platform.definitions import defs

    repo = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = node.group_name
    checks = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys)
    schedules = {s.name: s.job_name for s in repo.schedule_defs}
    sensors = {s.name: sorted(t.job_name for t in s.targets) for s in repo.sensor_defs}
    return {
        "assets": assets,
        "asset_checks": checks,
        "jobs": sorted(j.name for j in repo.get_all_jobs() if j.name != "__ASSET_JOB"),
        "schedules": dict(sorted(schedules.items())),
        "sensors": dict(sorted(sensors.items())),
        "resources": sorted(k for k in repo.get_top_level_resources()
                            if k != "io_manager"),
    }


def test_loaded_definitions_match_the_snapshot():
    expected = json.loads(SNAPSHOT.read_text())
    assert definitions_keys() == expected


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    SNAPSHOT.write_text(json.dumps(definitions_keys(), indent=1) + "\n")
    print(f"wrote {SNAPSHOT}")
