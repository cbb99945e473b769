"""Asset checks: the circuit breakers and invariants (blocking where a failure must stop the
run), each calling a domain function to judge."""

import warnings

# We use partitioned asset checks (preview) knowingly (ARCHITECTURE.md says why); Dagster's notice
# would be printed by every process that loads the definitions (webserver, daemon, runs).
warnings.filterwarnings("ignore", message=r".*is currently in (beta|preview)")
