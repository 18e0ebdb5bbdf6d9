"""The composition root: settings, listeners, health, metrics and the `okuri` command.

The only package that picks concrete adapters; nothing in okuri imports it.
"""
