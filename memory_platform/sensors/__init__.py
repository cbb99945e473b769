"""What the sensors and schedules of every domain share (they themselves are in
memory_platform/defs/<domain>/automation.py): `dream_switch`, whether the dream triggers
start switched on."""
