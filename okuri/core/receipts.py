"""Receipt handles: which message, in which queue incarnation, under which lease epoch.

The epoch is the message's receive count when it was leased. The manifest lets a receipt from
any receive of a message so far delete it (or change its visibility), as SQS does in practice;
only the newest, whose lease still runs, may hand it back or dead-letter it, and on a FIFO queue
delete it (okuri/core/transitions.py).

The epoch comes first in the handle, so two receipts of one message differ from their first
characters (a client or test that takes one handle for part of another is not misled); handles
of the first format (`okr1`, epoch last) are still read, for receipts issued before an upgrade.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from okuri.digits import whole_number
from okuri.errors import ReceiptHandleInvalid

PREFIX = "okr2"
PREFIX_V1 = "okr1"


@dataclass(frozen=True, slots=True)
class Receipt:
    queue: str
    incarnation: str
    seq: int
    idx: int
    epoch: int

    def encode(self) -> str:
        raw = f"{self.epoch}\n{self.queue}\n{self.incarnation}\n{self.seq}\n{self.idx}".encode()
        return PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def decode(handle: str) -> Receipt:
        if not isinstance(handle, str) or len(handle) > 1024:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.")
        version = handle[: len(PREFIX)]
        if version not in (PREFIX, PREFIX_V1):
            raise ReceiptHandleInvalid("The input receipt handle is invalid.")
        body = handle[len(PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
            fields = raw.split("\n")
            if version == PREFIX:
                epoch, queue, inc, seq, idx = fields
            else:
                queue, inc, seq, idx, epoch = fields
        except (ValueError, UnicodeDecodeError) as err:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.") from err
        seq_n, idx_n, epoch_n = whole_number(seq), whole_number(idx), whole_number(epoch)
        if seq_n is None or idx_n is None or epoch_n is None or epoch_n < 1:
            raise ReceiptHandleInvalid("The input receipt handle is invalid.")
        return Receipt(queue, inc, seq_n, idx_n, epoch_n)
