"""What the collector has read of each watched file (into its spool), and its status, as
JSON files in its state folder, each replaced atomically."""

import json
import os
from pathlib import Path


def load(path: Path, default: dict) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"{path} is damaged ({exc}); move it away to start over (the "
                         f"server drops what it has already)") from None
    return data if isinstance(data, dict) else default


def save(path: Path, data: dict) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, separators=(",", ":"))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
