"""The web console: static pages at /console on the main port, over the native API.

The pages (static/) call the native API with the bearer key the user types in; two read-only
routes of their own (okuri/console/routes.py) add what the API has no operation for: this
node's recent history of each queue, and the key table without secrets.
"""
