"""Every bound okuri enforces, in one place, units last in the name."""

from __future__ import annotations

# Messages and batches (SQS-shaped, except the larger message size).
message_bytes_max = 1024 * 1024
batch_entries_max = 10
batch_bytes_max = 1024 * 1024
receive_messages_max = 10  # one SQS ReceiveMessage
# A queue's lanes beside its own slot log (okuri/engine/lanes.py): one per producer node that
# met another's writes in the log it used; the manifest keeps at most this many.
lanes_max = 64
# A lane one node has seen hold nothing for this long is closed and, a freed slot's keep later,
# dropped (okuri/engine/lanes.py).
lane_quiet_s = 300.0
# A high-throughput FIFO queue's partitions (okuri/engine/partitions.py): each message group
# lives in one, by a hash of its id, so this is fixed when the queue is created.
fifo_partitions = 8
lease_messages_max = 100  # one engine receive (a native lease); SQS asks for at most 10
wait_s_max = 20
visibility_s_max = 12 * 60 * 60
delay_s_max = 15 * 60
schedule_s_max = 366 * 24 * 60 * 60  # a native item's enqueue_at, at most a year ahead
retention_s_min = 60
retention_s_max = 14 * 24 * 60 * 60
max_receive_count_max = 1000
queue_name_chars_max = 80

# Queue defaults (SQS's).
visibility_s_default = 30
retention_s_default = 4 * 24 * 60 * 60
dedup_window_s = 5 * 60
# FIFO: slots stay matched for duplicates this much longer than the window, for clock skew
# between the nodes that sent and adopted them.
dedup_window_margin_s = 60
# FIFO: discovery rounds a send may spend learning the slots below its own before it commits,
# and commits it may make waiting for the verdict on its messages.
reach_rounds_max = 64
# FIFO: adopted slots a receive may read ahead of loading them (only those not cached here).
fifo_load_ahead_slots = 4
fifo_send_commits_max = 20
# How long a message being copied to its dead-letter queue stays leased, whatever visibility
# the receive asked for: long enough for the copy to land, short enough to retry a crashed one.
dead_letter_hold_ms = 60_000
dedup_entries_max = 100_000

# Engine batching and bounds.
linger_ms_default = 100  # on S3: one window's requests are what a message costs
linger_ms_local_default = 0  # a local directory charges nothing per request: commit at once
linger_ms_max = 10_000
# While this many callers or more share a queue's flushes (sends, or commits), the flushes are at
# least flush_gather_ms apart, however short the linger: each flush costs CPU whatever it
# carries. Fewer callers are never held (a closed loop of one or two waits on every flush).
flush_gather_callers = 3
flush_gather_ms = 5
segment_bytes_max = 8 * 1024 * 1024
segment_messages_max = 4096
manifest_segments_max = 20_000
manifest_recent_slots = 64
# A producer whose cached manifest was last shown current longer ago than this reads it again
# before it picks a slot (one GET): a stale cursor leads into slots read and freed since.
slot_pick_fresh_s = 0.5
# A freed slot's object stays this long after a node saw it freed (okuri/engine/freed_slots.py),
# so a stale producer's write finds it taken; and a producer that picked its slot on a manifest
# shown current less than half of it before its write was answered needs no read of the manifest
# to know the slot will be read (half: a margin for clocks that run at different rates). 0: slots
# are deleted at once and every write is checked.
freed_slot_keep_s = 60.0
freed_slots_pending_max = 100_000  # per queue and node; beyond, the sweeper deletes them
freed_slot_deletes_concurrent = 32  # a store round trip each: at 30 ms, about 1,000 a second
manifest_recent_commits = 32
commit_ops_max = 2_000
# A commit that loses its compare-and-swap to another node re-reads and tries again: with many
# busy nodes on one queue a run of losses is common, and costs a read each, not a failed request.
commit_attempts_max = 100
conflict_backoff_ms_max = 100
# A node that finds other nodes' tokens among a manifest's latest commits reads it before each
# commit instead of trusting its cached copy (see `okuri.engine.manifest`).
shared_commit_tokens = 8
# The node that commits a queue for the others (okuri/core/leadership.py): how long its lead
# lasts after its last commit; how long a node waits for it to answer a forwarded commit, and
# how long it then commits by itself before trying it again.
commit_lead_ms = 3_000
peer_timeout_s = 5.0
peer_retry_s = 5.0
peer_clock_skew_s = 300  # a forwarded commit signed further from now is refused (replays)
peer_body_bytes_max = 4 * 1024 * 1024
# The segments a leader sends with a forwarded lease's answer, at most (okuri/engine/peering.py).
peer_segments_bytes_max = 2 * 1024 * 1024
# Nonces of forwards a leader remembers, each for peer_clock_skew_s past its date: a replay is
# refused. Far above what one node forwards in that time (each forward carries a commit window).
peer_nonces_max = 500_000
put_attempts_max = 12
backoff_ms_base = 10
backoff_ms_max = 2_000
probe_segments_max = 256
probe_parallel_max = 32  # slots read at once by one discovery round
# A receive reads the slot log ahead, in the background, for this many batches like its own.
discover_ahead_batches = 4
# Adopted into the manifest beyond what a commit's leases take: enough that the next receives
# find messages waiting, few enough that a deep backlog stays out of the manifest.
adopt_margin_messages = 200
count_probe_segments_max = 1_000
segment_cache_bytes_max = 256 * 1024 * 1024

# Discovery of messages sent through another node while receivers wait.
poll_ms_min = 50
poll_ms_max = 1_000
manifest_refresh_ms = 10_000
# GetQueueUrl answers from a cached manifest shown current less than this long ago.
queue_url_cached_s = 5.0
sweep_interval_s = 3_600
# Queue expiry (a native queue's `expires_s`, RabbitMQ's x-expires; okuri/core/expiry.py).
expires_s_min = 1
expires_s_max = 366 * 24 * 60 * 60
# A use is written to the manifest only when the recorded one is older than this fraction of
# expires_s, so a busy queue costs at most this many extra writes per expiry period.
expiry_touch_fraction = 4
# Every node LISTs the expiry markers this often (with +-25 % jitter from the clock), and reads
# a marked queue's manifest only when what it last saw of it says it may have expired.
expiry_sweep_s_default = 45
expiry_sweep_s_max = 3_600
# A marked queue whose manifest says it cannot expire soon is read again at least this often.
expiry_recheck_s_max = 3_600
# A tombstone (a manifest marked expired, kept while its node deletes it) older than this was
# left by a node that died half-way: any node's sweeper finishes the deletion.
expiry_tombstone_grace_s = 60

# Leases taken ahead for a node's next receives: how many, and how long they wait unused (or
# two commit windows, if longer) before they are handed back.
lease_ahead_hold_ms = 500
lease_ahead_messages_max = 100

# Ack logs (okuri/engine/ack_logs.py): a follower answers a delete once it is in a log object
# of its own. Ids are short; a commit closes at most this many due logs before its own work
# (the rest wait for the next); a log takes at most this many acks (then deletes forward).
ack_log_id_chars_max = 64
ack_logs_closed_per_commit_max = 8
ack_log_acks_max = 1_000
ack_log_sweep_pages_max = 100  # LIST pages of one queue's ack logs per sweep

# Message move tasks and the dead-letter source scan.
move_batch_messages_max = 100  # leased per step: ten receives, one segment, one ack commit
move_visibility_s = 60  # messages being moved stay hidden this long if the node dies
move_stop_s = 5.0  # on shutdown a step gets this long to finish before it is abandoned
sources_scan_page = 1_000  # queues listed (one LIST) and manifests read per scan round
sources_scan_queues_max = 10_000  # manifests one ListDeadLetterSourceQueues call reads at most
sources_scan_concurrency = 16
move_tasks_kept = 10
move_heartbeat_ms = 5_000
move_stale_ms = 60_000

# The server: request size, start-up, shutdown and readiness.
request_bytes_max = 4 * 1024 * 1024
startup_check_s = 30.0  # a bucket still coming up (compose, MinIO) gets this long to answer
startup_retry_s_max = 2.0
shutdown_grace_s = 10.0  # in-flight requests get this long to finish after a stop signal
flush_timeout_s = 30.0  # bound on engine.close(); past it, pending sends are reported lost
health_shutdown_s = 1.0
ready_timeout_s = 2.0  # a slow bucket reads as "not ready" rather than as a hung probe
ready_cache_s = 1.0
# A connection to the main listener that sends nothing is closed after this long (aiohttp's own
# keep-alive timeout, which takes over once the first bytes say HTTP/1.1).
first_bytes_s = 75.0
# Reading a request (okuri/server/front.py, okuri/engine/intake.py): its headers must be whole
# within read_timeout_s of their first byte, and its body may pause for at most that long; a
# body must be whole within body_s_max (4 MiB at 14 KiB/s). Past either the connection closes.
read_timeout_s_default = 30
read_timeout_s_max = 3_600
body_s_max = 300.0
lingering_s_max = 10.0  # aiohttp's default: reading what is left of a body answered early
# An HTTP connection idle between requests is closed after this long (nginx's default; aiohttp's
# own is an hour, a descriptor held that long by anyone who connects once).
keepalive_s = 75.0
# A TLS listener that cannot accept (out of descriptors) stops trying for this long.
accept_pause_s = 1.0

# Overload protection (okuri/engine/admission.py): what one node holds in flight at most, every
# surface together; past a bound a request is refused at once with its surface's throttle answer.
# The defaults sit far above `python -m bench sqs` at its largest (256 producers and 256
# consumers on one node, each with one request out at a time: 512 requests, 256 long polls,
# well under 1 MiB of bodies), so no benchmark sheds; they are low enough that a node refuses
# work before it runs short of memory (256 MiB of bodies at most) or of the descriptors an idle
# long poll holds.
inflight_requests_max_default = 2048
inflight_bytes_max_default = 256 * 1024 * 1024
long_polls_max_default = 1024
# Bodies read before their request is authenticated (okuri/engine/intake.py): charged as they
# arrive, at most this much in all and from one sender (an IPv4 address, an IPv6 /64). One
# sender's share holds sixteen of the largest bodies at once.
unverified_bytes_max_default = 256 * 1024 * 1024
sender_bytes_max_default = 64 * 1024 * 1024
# What the settings accept at most: a larger number is surely a typo.
inflight_requests_max_ceiling = 1_000_000
inflight_bytes_max_ceiling = 64 * 1024 * 1024 * 1024
overload_retry_after_s = 1  # the Retry-After of a refusal: a bound frees up within moments

# Quotas an operator sets (okuri/engine/quotas.py; OKURI_QUEUES_MAX and its neighbours): queues
# of one region in all and within one key's namespace, and the bytes of the attributes one queue
# stores verbatim (tags, policies), which ride every manifest write of that queue. 3,000 queues
# took a node from 78 to 168 MiB and /metrics to 15,214 lines; a 1 MB Policy made a receive 7.1 ms
# instead of 2.5. The attribute default holds any queue SQS itself accepts in ASCII (an 8 KiB
# policy, 50 tags of 128 + 256 characters, a redrive-allow policy: about 30 KiB).
queues_max_default = 10_000
namespace_queues_max_default = 1_000
queue_attributes_bytes_max_default = 64 * 1024
queues_max_ceiling = 1_000_000  # what the settings accept at most: more is surely a typo
queue_attributes_bytes_max_floor = 1024
queue_attributes_bytes_max_ceiling = 1024 * 1024

# Regions (okuri/server/regions.py): AWS's own and at most this many more named by the operator
# (OKURI_REGIONS), each served by an engine of its own once a request is signed for it.
regions_configured_max = 64

# Object-store adapters.
key_bytes_max = 1024  # S3's limit, so a key valid here is valid on every adapter
name_bytes_max = 240  # below NAME_MAX (255) with room for the directory suffix
lock_attempts_max = 100
mkdir_attempts_max = 16
local_prune_after_s = 30.0  # an emptied directory outlives its last delete by this much
# The journal store (okuri/store/journal.py) is compacted once its file holds this much and more
# than this many times what is live: each byte written is copied about once more, at most.
journal_compact_bytes_min = 64 * 1024 * 1024
journal_compact_ratio = 2.0
local_inline_s_max = 0.002  # local writes run on the event loop only while they average less
list_keys_max = 1000  # one ListObjectsV2 page

# The native API (okuri/native/): items per produce, lease and finishing request; queues listed
# per page. A native lease is one engine receive, so `native_items_max` <= `lease_messages_max`.
native_items_max = 100
native_list_max = 1000
# Browsing a queue without leasing (okuri/engine/browse.py): items per page, and slots one page
# reads at most, so a page of a queue full of finished or expired messages still ends quickly.
browse_items_max = 100
browse_items_default = 10
browse_segments_max = 64
native_text_chars_max = 1024  # a header value, a handle
dedup_id_chars_max = 128  # SQS's MessageDeduplicationId, and a native item's dedup_id
native_headers_max = 10  # as many as SQS message attributes, so SQS clients see them all

# Items scheduled beyond `delay_s_max` (okuri/engine/schedule.py): batched by the minute they are
# due, moved into the queue as delayed messages once their whole minute is within the longest
# delay. Any node serving the queue looks at most every `schedule_scan_s`, so an item moves in
# at least `delay_s_max - schedule_scan_s` before it is due; a claim stops two nodes moving one
# batch at once, and one left by a node that died is taken over after `schedule_claim_ms`.
schedule_bucket_ms = 60_000
schedule_scan_s = 300
schedule_claim_ms = 60_000
schedule_pages_max = 10  # LIST pages one scan reads (1,000 keys each)

# Exchanges (okuri/core/exchanges.py, okuri/engine/exchanges.py): an exchange document holds
# at most `exchange_bindings_max` bindings (it is read whole by every publishing node); a
# routing or binding key is at most `routing_key_chars_max` characters (AMQP's shortstr). A
# publish may route by a copy of the exchange at most `exchange_cache_ms` old on its node, so a
# node publishing steadily reads each exchange once per period.
exchange_name_chars_max = 80
exchange_bindings_max = 1_000
routing_key_chars_max = 255
exchange_cache_ms = 1_000

# The web console's in-memory history (okuri/console/history.py): one sample per queue every
# `console_sample_s`, the last `console_samples_max` of them (an hour), for at most
# `console_queues_max` queues.
console_sample_s = 10
console_samples_max = 360
console_queues_max = 100
