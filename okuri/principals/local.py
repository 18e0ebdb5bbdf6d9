"""The published development key, and where it is accepted: from this machine only.

`okuri serve` with no native key configured (no OKURI_ADMIN_KEY, no OKURI_API_KEYS_FILE) and
authentication on accepts `DEV_ADMIN_KEY` as an admin of every queue, so that `make serve`
comes up ready for `okuri queues`, the console and the native API, as the published SQS pair
makes it ready for SQS clients. The key is printed in the README and the start-up log: it is
no secret, so only a client on this machine may use it. A request carrying it must come from
a loopback address (127.0.0.0/8, ::1, or IPv4-mapped loopback) and forward for nobody: a proxy
on the same host connects from loopback for every client it serves, and says so with one of
`FORWARDING_HEADERS`. Once any key is configured, the development key is refused everywhere.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

DEV_ADMIN_KEY = "okuri-local-admin-key"
DEV_KEY_ID = "dev-key"  # how the key names itself in access logs and key listings
# Headers (and gRPC metadata) by which a proxy says whom it forwards for.
FORWARDING_HEADERS = frozenset({"forwarded", "x-forwarded-for", "x-real-ip"})
LOCALHOST = "localhost"  # RFC 6761: resolves to loopback only

DEV_KEY_ELSEWHERE = (
    "This server has no key configured, so it accepts only its published development key, "
    "and only from its own machine (a loopback address, not through a proxy). To reach it from "
    "elsewhere, configure a key: set OKURI_ADMIN_KEY (one admin bearer key) or "
    "OKURI_API_KEYS_FILE (a file that `okuri keys create` writes). See docs/native-api.md."
)


def is_loopback(address: str | None) -> bool:
    """Whether `address` (an IP address as a socket reports it; IPv6 with or without
    brackets or a zone) is a loopback address; False for anything else, names included."""
    if not address:
        return False
    text = address.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.partition("%")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped.is_loopback
    return ip.is_loopback


def is_local(address: str | None, headers: Iterable[str]) -> bool:
    """Whether a request from `address` carrying headers (or metadata) named `headers` comes
    from this machine itself: a loopback peer, forwarding for nobody."""
    if not is_loopback(address):
        return False
    return not any(name.lower() in FORWARDING_HEADERS for name in headers)


def is_local_host(host: str | None) -> bool:
    """Whether a URL's host names this machine: `localhost` or a loopback address."""
    if host is None:
        return False
    return host.lower().rstrip(".") == LOCALHOST or is_loopback(host)
