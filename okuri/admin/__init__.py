"""Operating a running okuri from the command line: `okuri queues ...` (through the native API,
with okuri.client) and `okuri keys list|revoke|rotate` (on the keys file, as `keys create`).

A tool beside the server, not part of it: `okuri serve` never imports this package (the server's
CLI hands these commands over with one import inside a function), so serving loads no client.
"""
