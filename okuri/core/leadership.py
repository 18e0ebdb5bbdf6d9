"""Which node commits a queue's manifest for the others: a lead that rides on its commits.

Nodes that each compare-and-swap one manifest lose most of their writes to each other as they
multiply; a node that forwards its operations to the one that commits anyway costs one call
instead, and that node applies everyone's operations in one write. The lead is a hint for speed
only: every write is still a compare-and-swap, so two nodes that both believe they lead (clocks
apart, a lead just taken over) merely contend as any two nodes always could.

A node takes the lead when it commits and finds none in force, and renews its own on every
commit; the lead lapses `limits.commit_lead_ms` after its holder's last commit, so a dead or
idle leader is replaced by the next node that commits, and a queue nobody writes costs nothing.
"""

from __future__ import annotations

from okuri import limits
from okuri.core.state import QueueState


def leader(st: QueueState, now_ms: int) -> tuple[str, str] | None:
    """(node id, URL) of the lead in force, or None."""
    if st.lead is None or st.lead[2] <= now_ms:
        return None
    return st.lead[0], st.lead[1]


def take_lead(
    st: QueueState, node: str, url: str, now_ms: int, passed_over: str = "", claim: bool = False
) -> None:
    """On a state about to be written by `node`: take the lead if none is in force (or the one
    in force is `passed_over`, a leader this node cannot reach, or `node` claims it: the node
    that produces into a lane, whose consumers take from it first), renew it if it is ours."""
    current = leader(st, now_ms)
    if current is None or claim or current[0] == node or current[0] == passed_over:
        st.lead = (node, url, now_ms + limits.commit_lead_ms)
