"""Deterministic simulation: virtual time, seeded faults, crashing nodes, invariant checkers."""
