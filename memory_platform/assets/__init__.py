"""What the assets of every domain share (the assets themselves are in
memory_platform/defs/<domain>/assets.py): the policy on Dagster's beta and preview features.

We use backfill policies (beta) and partitioned asset checks (preview) knowingly
(ARCHITECTURE.md says why); Dagster's notice would be printed by every process that loads
the definitions (webserver, daemon, runs). memory_platform/defs imports this first."""

import warnings

warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
