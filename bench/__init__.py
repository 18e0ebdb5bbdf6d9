"""okuri's benchmarks: figures printed, never assertions on timing.

A tool beside okuri, not part of its package (the wheel ships okuri only): run from a checkout
as `python -m bench SUB`. It drives okuri as a client does, and import contracts hold it to that
(docs/design.md, "Where the code lives").
"""
