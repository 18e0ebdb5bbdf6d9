"""The native API: HTTP/JSON under /v1/ with bearer keys, roles and namespaces.

It talks to `okuri.engine`'s public face only and never touches the store (import-linter holds
it to both), so whatever it does to a queue, the SQS surface sees the same queue.
"""
