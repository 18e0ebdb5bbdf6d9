"""Principals: who a request acts as, on every surface, and what that principal may do.

One model serves both surfaces, so a consumer key is a consumer over SQS and over the native
API alike: the roles, the operation vocabulary and the pure decision (`roles`), the keys a node
accepts, native bearer keys and SQS access keys (`keys`), and the keys file on disk with
`okuri keys create` (`keyfile`). Each surface maps its own requests onto the operations and
renders a refusal in its own shape (`okuri.native.access`, `okuri.sqs.access`).

It sits below the surfaces and beside the engine: it knows nothing of queues' storage, only
queue names.
"""
