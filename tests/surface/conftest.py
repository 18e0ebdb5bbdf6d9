"""Surface suites use the shared server fixtures of tests/conftest.py."""
