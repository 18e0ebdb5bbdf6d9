"""okuri embedded in your program: the documented entry point (docs/embedding.md).

`Embedded` gives an engine in this process, on a local directory or in memory;
`serve_in_thread` runs a whole server on loopback on a thread of its own, for tests of programs
that talk to okuri over HTTP. Both are built in the composition root (okuri/server/embedded.py),
the only place that picks concrete adapters; this module is their public name.
"""

from okuri.server.embedded import Embedded, Served, serve_in_thread

__all__ = ["Embedded", "Served", "serve_in_thread"]
