"""okuri's compatibility harness: SDK scenario programs, their recordings, and the recorder.

It sits outside okuri and uses only its public surfaces: a running `okuri serve` and its wire
protocols. Nothing in okuri imports it.
"""
