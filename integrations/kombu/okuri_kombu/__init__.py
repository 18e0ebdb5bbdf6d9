"""okuri_kombu: a kombu transport for okuri's native API, so that `okuri://KEY@host:8080` is a
kombu and Celery broker URL.

    import okuri_kombu  # registers okuri:// and okuris:// with kombu
    from celery import Celery

    app = Celery("myapp", broker="okuri://KEY@localhost:8080")

Importing the package adds the two schemes to kombu's transport aliases
(`kombu.transport.TRANSPORT_ALIASES`), as third-party transports do; `register()` does it again
(for a process that imported kombu's table anew). Without the import, name the class instead:
`Connection(url, transport="okuri_kombu.transport:Transport")` (Celery: `broker_transport`).

The transport is kombu's virtual transport over okuri's leases: okuri_kombu/channel.py maps
kombu's operations, okuri_kombu/keeper.py sends acks in batches and keeps held messages leased,
okuri_kombu/options.py lists the transport options. README.md beside this package tells more.
"""

from __future__ import annotations

from kombu.transport import TRANSPORT_ALIASES

from .channel import Channel, QoS
from .options import Options
from .transport import VERSION, SecureTransport, Transport

__all__ = ["Channel", "Options", "QoS", "SecureTransport", "Transport", "register"]
__version__ = VERSION

ALIASES = {
    "okuri": "okuri_kombu.transport:Transport",
    "okuris": "okuri_kombu.transport:SecureTransport",
}


def register() -> None:
    """Make okuri:// and okuris:// known to kombu (done on import)."""
    TRANSPORT_ALIASES.update(ALIASES)


register()
