"""This machine's identity: a stable id made at its first run and a name the person can
change, kept in HOME/machine.json (HOME: MEMORY_PLATFORM_HOME). The local database's own
machine row takes it (ingest/machines.py), and a collector sends it with every push."""

import json
import os
import re
import socket
import uuid
from pathlib import Path

FILE_NAME = "machine.json"
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def default_name() -> str:
    """The host's short name, made a valid machine name."""
    host = socket.gethostname().split(".")[0]
    name = re.sub(r"[^A-Za-z0-9._-]", "-", host).lstrip("._-")[:63]
    return name or "machine"


def check_name(name: str) -> str:
    if not _NAME_OK.match(name or ""):
        raise ValueError(f"invalid machine name {name!r}: up to 63 letters, digits, '.', '_' "
                         f"and '-', starting with a letter or digit")
    return name


def identity(home: Path) -> dict:
    """{"uid", "name"} of this machine, made (once, race-free) on the first call."""
    path = Path(home).expanduser() / FILE_NAME
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    made = {"uid": uuid.uuid4().hex, "name": default_name()}
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(made), encoding="utf-8")
    try:
        os.link(tmp, path)  # fails if another first run made it meanwhile: theirs wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path)


def rename(home: Path, new: str) -> dict:
    """Store a new name for this machine (its uid stays)."""
    current = identity(home)
    current["name"] = check_name(new)
    path = Path(home).expanduser() / FILE_NAME
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(current), encoding="utf-8")
    os.replace(tmp, path)
    return current


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeError) as exc:
        raise ValueError(f"{path} is not this machine's identity ({exc}); move it away and "
                         f"a new one is made") from None
    if not (isinstance(data, dict) and isinstance(data.get("uid"), str)
            and isinstance(data.get("name"), str)):
        raise ValueError(f"{path} is not this machine's identity (no uid and name)")
    return {"uid": data["uid"], "name": data["name"]}
