"""Benchmarks that print figures; never assertions on timing."""
