"""okuri_kombu's pure parts: transport options, queue names, and messages as items and back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import okuri_kombu
import pytest
from kombu.transport import TRANSPORT_ALIASES, resolve_transport
from okuri_kombu.arguments import QueueArguments
from okuri_kombu.names import QueueNameError, okuri_exchange_name, okuri_queue_name
from okuri_kombu.options import Options
from okuri_kombu.pacing import (
    AUX_POLL_S,
    LEASE_BATCH_WAIT_S,
    MULTI_QUEUE_WAIT_S,
    NO_POLL,
    lease_wait_s,
    poll_wait_s,
)
from okuri_kombu.payloads import item_text, message_expired, payload_of

from okuri.client import LeasedItem

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def leased(body: bytes, handle: str = "h-1", headers: dict[str, str] | None = None) -> LeasedItem:
    return LeasedItem("id-1", handle, 2, WHEN, WHEN, body, headers or {})


class TestRegistration:
    def test_importing_the_package_makes_okuri_and_okuris_kombu_transports(self) -> None:
        assert TRANSPORT_ALIASES["okuri"] == "okuri_kombu.transport:Transport"
        assert resolve_transport("okuri") is okuri_kombu.Transport
        assert resolve_transport("okuris") is okuri_kombu.SecureTransport

    def test_registering_again_restores_aliases_removed_meanwhile(self) -> None:
        del TRANSPORT_ALIASES["okuris"]
        okuri_kombu.register()
        assert TRANSPORT_ALIASES["okuris"] == "okuri_kombu.transport:SecureTransport"


class TestOptions:
    def test_defaults_lease_for_a_minute_and_long_poll_ten_seconds(self) -> None:
        options = Options.read({})
        assert (options.lease_s, options.wait_time_s, options.queue_name_prefix) == (60, 10, "")
        assert options.attributes_for("tasks") == {"lease_timeout_s": 60}

    def test_queue_attributes_apply_to_every_queue_and_overrides_to_theirs(self) -> None:
        options = Options.read(
            {
                "lease_s": 30,
                "queue_attributes": {"max_attempts": 5, "retention_s": 3600},
                "queue_overrides": {"slow": {"max_attempts": 1, "lease_timeout_s": 300}},
                "visibility_timeout": 99,  # another transport's option: left alone
            }
        )
        assert options.attributes_for("fast") == {
            "lease_timeout_s": 30,
            "max_attempts": 5,
            "retention_s": 3600,
        }
        assert options.attributes_for("slow") == {
            "lease_timeout_s": 300,
            "max_attempts": 1,
            "retention_s": 3600,
        }

    @pytest.mark.parametrize(
        ("given", "named"),
        [
            ({"lease_s": 0}, "'lease_s' must be an integer from 1 to 43200"),
            ({"lease_s": "60"}, "'lease_s'"),
            ({"wait_time_s": 21}, "'wait_time_s' must be an integer from 0 to 20"),
            ({"wait_time_s": True}, "'wait_time_s'"),
            ({"timeout_s": 0}, "'timeout_s' must be a number of seconds above 0"),
            ({"key": 5}, "'key' must be a string"),
            ({"queue_attributes": {"visibility": 5}}, "unknown queue attribute(s) visibility"),
            ({"queue_attributes": [1]}, "queue_attributes must be a mapping"),
            ({"queue_overrides": {"q": {"ttl": 1}}}, "queue_overrides['q']: unknown"),
            ({"queue_overrides": ["q"]}, "'queue_overrides' must map queue names"),
        ],
    )
    def test_a_bad_option_is_refused_naming_it(self, given: dict[str, object], named: str) -> None:
        with pytest.raises(ValueError) as refused:
            Options.read(given)
        assert named in str(refused.value)


class TestQueueNames:
    def test_kombu_names_are_translated_as_the_sqs_transport_translates_them(self) -> None:
        assert okuri_queue_name("celery") == "celery"
        assert okuri_queue_name("w1@host.celery.pidbox") == "w1_host-celery-pidbox"
        assert okuri_queue_name("tasks", prefix="prod.") == "prod-tasks"

    def test_a_name_past_eighty_characters_is_shortened_the_same_way_everywhere(self) -> None:
        assert okuri_queue_name("q" * 80) == "q" * 80
        assert okuri_queue_name("q" * 75, prefix="long-") == "long-" + "q" * 75
        long = okuri_queue_name("a-very-long-worker-hostname.example.com" * 2 + ".celery.pidbox")
        assert len(long) == 80 and long.startswith("a-very-long-worker-hostname-example-com")
        assert long == okuri_queue_name(
            "a-very-long-worker-hostname.example.com" * 2 + ".celery.pidbox"
        )
        assert long != okuri_queue_name(
            "a-very-long-worker-hostname.example.com" * 2 + ".celery.pidbax"
        )
        assert okuri_queue_name("q" * 76, prefix="long-")[:67] == "long-" + "q" * 62
        with pytest.raises(QueueNameError, match="1 to 80"):
            okuri_queue_name("")

    def test_exchange_names_are_translated_as_queue_names(self) -> None:
        assert okuri_exchange_name("reply.celery.pidbox") == "reply-celery-pidbox"
        assert okuri_exchange_name("celeryev", prefix="prod.") == "prod-celeryev"
        with pytest.raises(QueueNameError, match="default exchange"):
            okuri_exchange_name("")

    def test_a_fifo_queue_is_refused_pointing_at_sqs(self) -> None:
        with pytest.raises(QueueNameError, match="use sqs://"):
            okuri_queue_name("orders.fifo")


class TestPayloads:
    def test_a_kombu_message_comes_back_with_the_lease_as_its_delivery_tag(self) -> None:
        message = {
            "body": "eyJ4IjogMX0=",
            "content-type": "application/json",
            "content-encoding": "utf-8",
            "headers": {"task": "add"},
            "properties": {
                "delivery_tag": "tag-of-the-publisher",
                "body_encoding": "base64",
                "delivery_info": {"exchange": "", "routing_key": "tasks"},
            },
        }
        payload = payload_of(leased(item_text(message).encode(), handle="lease-7"), "tasks")
        assert payload["properties"]["delivery_tag"] == "lease-7"
        assert payload["properties"]["delivery_info"] == {
            "exchange": "",
            "routing_key": "tasks",
            "okuri_queue": "tasks",
            "okuri_id": "id-1",
            "okuri_attempts": 2,
        }
        assert payload["headers"] == {"task": "add"} and payload["body"] == message["body"]

    def test_an_item_kombu_did_not_produce_is_wrapped_as_a_plain_message(self) -> None:
        payload = payload_of(leased(b"hello", headers={"to": "ada"}), "mail")
        assert payload["body"] == "hello" and payload["headers"] == {"to": "ada"}
        assert payload["properties"]["body_encoding"] is None
        assert payload["properties"]["delivery_tag"] == "h-1"
        json.dumps(payload)  # kombu may dump an unacked message's payload as JSON

    def test_a_binary_item_is_wrapped_in_base64_and_decodes_to_its_bytes(self) -> None:
        payload = payload_of(leased(b"\x89PNG\xff"), "images")
        assert payload["properties"]["body_encoding"] == "base64"
        assert payload["body"] == "iVBOR/8="

    def test_json_that_is_not_a_kombu_message_is_wrapped_too(self) -> None:
        assert payload_of(leased(b'{"order": 7}'), "q")["body"] == '{"order": 7}'
        assert payload_of(leased(b'{"properties": 1}'), "q")["body"] == '{"properties": 1}'


class TestMessageExpiration:
    @pytest.mark.parametrize(
        ("expiration", "age_s", "expired"),
        [
            ("5000", 5.0, False),  # kombu's expiration=5: 5 s exactly is not past it
            ("5000", 5.001, True),
            ("0", 0.001, True),
            (None, 1e9, False),
            ("soon", 1e9, False),  # not milliseconds: never
            (True, 1e9, False),
            ("-1", 1e9, False),
        ],
    )
    def test_a_message_expires_past_its_expiration_property_in_milliseconds(
        self, expiration: object, age_s: float, expired: bool
    ) -> None:
        properties = {} if expiration is None else {"expiration": expiration}
        payload = {"body": "", "properties": properties}
        assert message_expired(payload, 100.0, 100.0 + age_s) is expired


class TestQueueArguments:
    def test_expires_and_message_ttl_become_okuri_attributes(self) -> None:
        args = QueueArguments.read({"x-expires": 10_000, "x-message-ttl": 300_000}, True)
        assert args.attributes() == {"expires_s": 10, "retention_s": 300}
        assert args.auto_delete and args.message_ttl_s == 300.0
        assert QueueArguments.read({"x-expires": 1}).attributes() == {"expires_s": 1}
        assert QueueArguments.read({"x-message-ttl": 5000}).attributes() == {"retention_s": 60}
        assert QueueArguments.read(None).attributes() == {}

    def test_a_message_is_past_its_ttl_only_when_the_queue_has_one(self) -> None:
        args = QueueArguments.read({"x-message-ttl": 5000})
        assert args.expired(100.0, 105.5) and not args.expired(100.0, 104.0)
        assert not QueueArguments().expired(0.0, 1e9)

    def test_a_bad_argument_is_refused_naming_it(self) -> None:
        with pytest.raises(ValueError, match="'x-expires'"):
            QueueArguments.read({"x-expires": "soon"})


class TestPacing:
    @pytest.mark.parametrize(
        ("room", "window", "since_s", "wait_s"),
        [
            (None, 0, 0.0, 0.0),  # no prefetch limit: lease now
            (0, 8, 5.0, None),  # a full window: only an ack makes room
            (8, 8, 0.0, 0.0),  # nothing held
            (4, 8, 0.0, 0.0),  # half free
            (3, 8, 0.0, LEASE_BATCH_WAIT_S),  # most held: wait for more room
            (3, 8, LEASE_BATCH_WAIT_S / 4, 0.75 * LEASE_BATCH_WAIT_S),
            (1, 8, LEASE_BATCH_WAIT_S, 0.0),  # or not longer than that since the last lease
            (1, 1, 0.0, 0.0),  # a window of one
        ],
    )
    def test_a_lease_waits_for_half_the_window_while_the_rest_is_held(
        self, room: int | None, window: int, since_s: float, wait_s: float | None
    ) -> None:
        got = lease_wait_s(room, window, 100.0, 100.0 + since_s)
        assert got == (None if wait_s is None else pytest.approx(wait_s))

    @pytest.mark.parametrize(
        ("args", "kwargs", "wait_s"),
        [
            ((10, None), {"queues_consumed": 1}, 10),
            ((10, 2.5), {"queues_consumed": 1}, 2),  # within the drain's timeout
            ((10, 0.95), {"queues_consumed": 1}, 1),  # a second, less the drain's start
            ((10, 1.95), {"queues_consumed": 1}, 2),
            ((10, 0.85), {"queues_consumed": 1}, 0),  # under a second: a short poll
            ((10, None), {"queues_consumed": 2}, MULTI_QUEUE_WAIT_S),
            ((10, 0.5), {"queues_consumed": 2}, 0),
            ((10, None), {"queues_consumed": 2, "auto_delete_beside_others": True}, 0),
            ((10, None), {"queues_consumed": 2, "auto_delete_beside_others": True,
                          "since_poll_s": AUX_POLL_S / 2}, NO_POLL),
        ],
    )  # fmt: skip
    def test_how_long_each_lease_polls(
        self, args: tuple[int, float | None], kwargs: dict[str, Any], wait_s: int
    ) -> None:
        options = {"auto_delete_beside_others": False, "since_poll_s": 1e9, **kwargs}
        assert poll_wait_s(*args, **options) == wait_s
