"""The one Definitions object: the defs folder (memory_platform/defs/), loaded whole by
Dagster's `load_from_defs_folder` from the project named in pyproject's [tool.dg]. Assembly
only, no I/O at import time."""

from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
