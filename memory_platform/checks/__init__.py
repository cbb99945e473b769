"""Asset checks: the circuit breakers and invariants (blocking where a failure must stop the
run), each calling a domain function to judge."""
