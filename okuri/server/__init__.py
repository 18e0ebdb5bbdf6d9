"""The composition root: settings, listeners, health, metrics and the `okuri` command.

The only package that picks concrete adapters; nothing in okuri imports it but
`okuri.embedded`, the public name of its embedding helpers (okuri/server/embedded.py).
"""
