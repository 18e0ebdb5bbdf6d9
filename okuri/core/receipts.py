"""Receipt handles: which message, in which queue incarnation, under which lease epoch.

The epoch is the message's receive count when it was leased. The manifest only lets a receipt
ack or move a message whose current epoch still equals it, so a receipt from before a redelivery
can never finish the message (a slow clock costs a redelivery, never a double ack).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from okuri.errors import ReceiptHandleInvalid

PREFIX = "okr1"


@dataclass(frozen=True, slots=True)
class Receipt:
    queue: str
    incarnation: str
    seq: int
    idx: int
    epoch: int

    def encode(self) -> str:
        raw = f"{self.queue}\n{self.incarnation}\n{self.seq}\n{self.idx}\n{self.epoch}".encode()
        return PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(handle: str) -> Receipt:
        if not isinstance(handle, str) or not handle.startswith(PREFIX) or len(handle) > 1024:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.")
        body = handle[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
            queue, inc, seq, idx, epoch = raw.split("\n")
            receipt = Receipt(queue, inc, int(seq), int(idx), int(epoch))
        except (ValueError, UnicodeDecodeError) as err:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.") from err
        if receipt.seq < 0 or receipt.idx < 0 or receipt.epoch < 1:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.")
        return receipt
