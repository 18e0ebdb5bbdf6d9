"""Settings parsing: environment, flags winning over it, and one-line errors for bad values."""

from __future__ import annotations

import argparse

import pytest

from okuri import limits
from okuri.server.settings import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    LINGER_MS_MAX,
    OPTIONS,
    Address,
    Settings,
    SettingsError,
    add_arguments,
    parse_address,
)


def flags(*argv: str) -> dict[str, object]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return vars(parser.parse_args(list(argv)))


def load_error(environ: dict[str, str], *argv: str) -> str:
    with pytest.raises(SettingsError) as caught:
        Settings.load(environ, flags(*argv))
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- addresses ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.0.0.0:8080", Address("0.0.0.0", 8080)),
        ("127.0.0.1:1", Address("127.0.0.1", 1)),
        (":8080", Address(None, 8080)),
        ("*:8080", Address(None, 8080)),
        ("localhost:9090", Address("localhost", 9090)),
        ("[::1]:8080", Address("::1", 8080)),
        ("[::]:65535", Address("::", 65535)),
        ("  127.0.0.1:0 ", Address("127.0.0.1", 0)),
    ],
)
def test_listen_addresses_in_every_documented_spelling_parse(text: str, expected: Address) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("8080", "HOST:PORT"),
        ("127.0.0.1:http", "not a number"),
        ("127.0.0.1:", "not a number"),
        ("127.0.0.1:65536", "0 to 65535"),
        ("127.0.0.1:-1", "not a number"),
        ("127.0.0.1:+80", "not a number"),
        ("::1:8080", "brackets"),
        ("[::1]8080", "[IPV6]:PORT"),
        ("[::1", "[IPV6]:PORT"),
        ("[localhost]:8080", "not an IPv6 address"),
        ("http://x:80", "not a host"),
        ("a b:80", "not a host"),
    ],
)
def test_malformed_listen_addresses_say_what_is_wrong(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint.replace("[", r"\[")):
        parse_address(text)


def test_addresses_print_back_in_a_form_that_parses_again() -> None:
    for text in ("127.0.0.1:80", ":80", "[::1]:80"):
        assert str(parse_address(text)) == text
        assert parse_address(str(parse_address(text))) == parse_address(text)


# --- sources and precedence -------------------------------------------------------------------


def test_nothing_configured_gives_the_documented_defaults() -> None:
    s = Settings.load({})
    # Loopback: the default key pair is published, so nothing else may reach it unasked.
    assert s.listen == Address("127.0.0.1", 8080)
    assert s.health_listen == Address("127.0.0.1", 9090)
    assert s.data_dir == "./okuri-data"
    assert s.linger_ms == limits.linger_ms_local_default
    assert s.s3_bucket is None and not s.uses_s3
    assert s.s3_region == "us-east-1"
    assert s.s3_prefix == ""
    assert (s.access_key_id, s.secret_access_key) == (DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY)
    assert s.uses_dev_credentials
    assert s.public_url is None
    assert (s.region, s.account_id, s.log_level) == ("us-east-1", "000000000000", "info")
    assert s.inflight_requests_max == limits.inflight_requests_max_default
    assert s.inflight_bytes_max == limits.inflight_bytes_max_default
    assert s.long_polls_max == limits.long_polls_max_default


def test_environment_configures_every_option() -> None:
    env = {
        "OKURI_LISTEN": "127.0.0.1:1234",
        "OKURI_HEALTH_LISTEN": "[::1]:1235",
        "OKURI_DATA_DIR": "/var/lib/okuri",
        "OKURI_LINGER_MS": "0",
        "OKURI_S3_ENDPOINT": "http://minio:9000/",
        "OKURI_S3_BUCKET": "jobs",
        "OKURI_S3_REGION": "eu-west-3",
        "OKURI_S3_ACCESS_KEY_ID": "AKIA",
        "OKURI_S3_SECRET_ACCESS_KEY": "s3-secret",
        "OKURI_S3_PREFIX": "prod/",
        "OKURI_ACCESS_KEY_ID": "client",
        "OKURI_SECRET_ACCESS_KEY": "client-secret",
        "OKURI_PUBLIC_URL": "https://sqs.example.com",
        "OKURI_REGION": "eu-west-3",
        "OKURI_ACCOUNT_ID": "123456789012",
        "OKURI_LOG_LEVEL": "DEBUG",
        "OKURI_INFLIGHT_REQUESTS_MAX": "40",
        "OKURI_INFLIGHT_BYTES_MAX": str(8 * 1024 * 1024),
        "OKURI_LONG_POLLS_MAX": "30",
    }
    s = Settings.load(env)
    assert s.listen == Address("127.0.0.1", 1234)
    assert s.health_listen == Address("::1", 1235)
    assert s.data_dir == "/var/lib/okuri"
    assert s.linger_ms == 0
    assert s.s3_endpoint == "http://minio:9000"
    assert (s.s3_bucket, s.s3_region, s.s3_prefix) == ("jobs", "eu-west-3", "prod/")
    assert (s.s3_access_key_id, s.s3_secret_access_key) == ("AKIA", "s3-secret")
    assert (s.access_key_id, s.secret_access_key) == ("client", "client-secret")
    assert not s.uses_dev_credentials
    assert s.public_url == "https://sqs.example.com"
    assert (s.region, s.account_id, s.log_level) == ("eu-west-3", "123456789012", "debug")
    assert s.uses_s3
    assert (s.inflight_requests_max, s.inflight_bytes_max, s.long_polls_max) == (
        40,
        8 * 1024 * 1024,
        30,
    )


def test_a_flag_wins_over_its_environment_variable() -> None:
    env = {"OKURI_LISTEN": "127.0.0.1:1", "OKURI_LINGER_MS": "abc", "OKURI_DATA_DIR": "/env"}
    s = Settings.load(env, flags("--listen", ":2", "--linger-ms", "7"))
    assert s.listen == Address(None, 2)
    assert s.linger_ms == 7
    assert s.data_dir == "/env"  # no flag given: the environment still counts


def test_every_option_has_a_flag_and_a_variable_of_the_same_name() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags_known = {a for action in parser._actions for a in action.option_strings}
    for option in OPTIONS:
        assert option.flag in flags_known
        assert option.env == "OKURI_" + option.flag[2:].replace("-", "_").upper()
    assert {o.flag for o in OPTIONS} >= {"--listen", "--health-listen", "--data-dir", "--linger-ms"}
    assert {o.flag for o in OPTIONS} >= {
        "--s3-endpoint",
        "--s3-bucket",
        "--s3-region",
        "--s3-access-key-id",
        "--s3-secret-access-key",
        "--s3-prefix",
    }


def test_an_empty_variable_counts_as_unset() -> None:
    s = Settings.load({"OKURI_S3_BUCKET": "", "OKURI_LINGER_MS": " ", "OKURI_LISTEN": ""})
    assert s.s3_bucket is None
    assert s.linger_ms == limits.linger_ms_local_default
    assert s.listen == Address("127.0.0.1", 8080)


def test_linger_defaults_to_the_s3_cost_window_only_on_s3() -> None:
    assert Settings.load({"OKURI_S3_BUCKET": "b"}).linger_ms == limits.linger_ms_default
    assert Settings.load({"OKURI_S3_BUCKET": "b", "OKURI_LINGER_MS": "20"}).linger_ms == 20


def test_ack_logs_are_on_for_a_local_directory_and_off_on_s3_unless_asked() -> None:
    assert Settings.load({}).ack_logs is True
    assert Settings.load({"OKURI_S3_BUCKET": "b"}).ack_logs is False
    assert Settings.load({"OKURI_S3_BUCKET": "b", "OKURI_ACK_LOGS": "on"}).ack_logs is True
    assert Settings.load({"OKURI_ACK_LOGS": "off"}).ack_logs is False
    assert "OKURI_ACK_LOGS='sometimes'" in load_error({"OKURI_ACK_LOGS": "sometimes"})


def test_log_format_is_text_unless_json_is_asked_for() -> None:
    assert Settings.load({}).log_format == "text"
    assert Settings.load({"OKURI_LOG_FORMAT": "JSON"}).log_format == "json"
    assert Settings.load({}, {"log_format": "json"}).log_format == "json"
    message = load_error({"OKURI_LOG_FORMAT": "logfmt"})
    assert message == "OKURI_LOG_FORMAT='logfmt': expected one of text, json"


# --- one-line errors --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "1.5", "10ms", "0x10"])
def test_a_non_numeric_linger_is_refused_naming_the_flag(value: str) -> None:
    message = load_error({}, "--linger-ms", value)
    assert message.startswith("--linger-ms=")
    assert "whole number of milliseconds" in message


def test_a_negative_or_huge_linger_is_refused_naming_the_variable() -> None:
    assert "from 0 to" in load_error({"OKURI_LINGER_MS": "-1"})
    assert "OKURI_LINGER_MS='-1'" in load_error({"OKURI_LINGER_MS": "-1"})
    assert str(LINGER_MS_MAX) in load_error({"OKURI_LINGER_MS": str(LINGER_MS_MAX + 1)})
    assert Settings.load({"OKURI_LINGER_MS": str(LINGER_MS_MAX)}).linger_ms == LINGER_MS_MAX


def test_an_explicitly_empty_flag_is_refused_rather_than_defaulted() -> None:
    assert "must not be empty" in load_error({}, "--data-dir", "")


def test_a_bad_port_is_refused_naming_the_variable() -> None:
    message = load_error({"OKURI_HEALTH_LISTEN": "127.0.0.1:metrics"})
    assert message.startswith("OKURI_HEALTH_LISTEN='127.0.0.1:metrics': ")
    assert "port" in message


def test_both_listeners_on_one_port_are_refused() -> None:
    same = "127.0.0.1:9000"
    message = load_error({"OKURI_LISTEN": same, "OKURI_HEALTH_LISTEN": same})
    assert "both" in message
    both_ephemeral = {"OKURI_LISTEN": "127.0.0.1:0", "OKURI_HEALTH_LISTEN": "127.0.0.1:0"}
    assert Settings.load(both_ephemeral).listen.port == 0


def test_half_an_s3_key_pair_is_refused() -> None:
    message = load_error({"OKURI_S3_BUCKET": "b", "OKURI_S3_ACCESS_KEY_ID": "AKIA"})
    assert "OKURI_S3_SECRET_ACCESS_KEY" in message
    without_keys = Settings.load({"OKURI_S3_BUCKET": "b"})
    assert without_keys.s3_access_key_id is None  # the AWS default chain applies


def test_tls_needs_a_certificate_and_its_key_and_client_cas_need_tls() -> None:
    for half in ({"OKURI_TLS_CERT": "c.pem"}, {"OKURI_TLS_KEY": "k.pem"}):
        assert load_error(half).startswith("set both OKURI_TLS_CERT and OKURI_TLS_KEY")
    message = load_error({"OKURI_TLS_CLIENT_CA": "ca.pem"})
    assert message.startswith("OKURI_TLS_CLIENT_CA is set but OKURI_TLS_CERT")
    tls = {"OKURI_TLS_CERT": "c.pem", "OKURI_TLS_KEY": "k.pem", "OKURI_TLS_CLIENT_CA": "ca.pem"}
    s = Settings.load(tls)
    assert (s.tls_cert, s.tls_key, s.tls_client_ca) == ("c.pem", "k.pem", "ca.pem")
    assert Settings.load({}).tls_cert is None  # plaintext unless asked


def test_s3_settings_without_a_bucket_are_refused_rather_than_using_the_local_store() -> None:
    message = load_error({"OKURI_S3_ENDPOINT": "http://127.0.0.1:9000"})
    assert message.startswith("OKURI_S3_ENDPOINT is set but OKURI_S3_BUCKET is not")
    assert "--s3-prefix" in load_error({}, "--s3-prefix", "p")


@pytest.mark.parametrize(
    ("environ", "complaint"),
    [
        ({"OKURI_S3_BUCKET": "b", "OKURI_S3_ENDPOINT": "minio:9000"}, "http:// or https://"),
        ({"OKURI_S3_BUCKET": "b", "OKURI_S3_ENDPOINT": "http://x:99999"}, "http:// or https://"),
        ({"OKURI_PUBLIC_URL": "ftp://x"}, "http:// or https://"),
        ({"OKURI_ACCOUNT_ID": "12345"}, "12 digits"),
        ({"OKURI_REGION": "us east"}, "region name"),
        ({"OKURI_LOG_LEVEL": "loud"}, "one of debug, info"),
    ],
)
def test_other_malformed_values_are_refused(environ: dict[str, str], complaint: str) -> None:
    assert complaint in load_error(environ)


@pytest.mark.parametrize(
    ("environ", "complaint"),
    [
        ({"OKURI_INFLIGHT_REQUESTS_MAX": "many"}, "OKURI_INFLIGHT_REQUESTS_MAX='many': expected"),
        ({"OKURI_INFLIGHT_REQUESTS_MAX": "1"}, "must be from 2 to"),
        ({"OKURI_INFLIGHT_BYTES_MAX": "1024"}, "one largest request at least"),
        ({"OKURI_LONG_POLLS_MAX": "0"}, "OKURI_LONG_POLLS_MAX='0': must be from 1 to"),
        (
            {"OKURI_INFLIGHT_REQUESTS_MAX": "10", "OKURI_LONG_POLLS_MAX": "10"},
            "below OKURI_INFLIGHT_REQUESTS_MAX=10",
        ),
        (
            {"OKURI_LONG_POLLS_MAX": str(limits.inflight_requests_max_default)},
            f"below OKURI_INFLIGHT_REQUESTS_MAX={limits.inflight_requests_max_default}",
        ),
    ],
)
def test_overload_bounds_that_cannot_work_are_refused_naming_the_variable(
    environ: dict[str, str], complaint: str
) -> None:
    assert complaint in load_error(environ)


def test_secrets_never_appear_in_repr_or_errors_or_the_store_description() -> None:
    s = Settings.load(
        {
            "OKURI_S3_BUCKET": "b",
            "OKURI_S3_ACCESS_KEY_ID": "AKIA",
            "OKURI_S3_SECRET_ACCESS_KEY": "s3-very-secret",
            "OKURI_SECRET_ACCESS_KEY": "sqs-very-secret",
        }
    )
    assert "very-secret" not in repr(s)
    assert "very-secret" not in s.describe_store()
    assert s.describe_store() == "s3://b/ at AWS (region us-east-1)"
    assert "local directory" in Settings.load({}).describe_store()


# --- where other nodes reach this one ----------------------------------------------------------


def test_the_peer_url_is_a_url_or_off_and_derived_from_the_listener_when_unset() -> None:
    from okuri.server.peers import advertised_url

    assert Settings.load({}, flags()).peer_url is None
    assert Settings.load({"OKURI_PEER_URL": "OFF"}, flags()).peer_url == "off"
    given = Settings.load({"OKURI_PEER_URL": "http://node-2:8080/"}, flags())
    assert given.peer_url == "http://node-2:8080"
    assert "OKURI_PEER_URL" in load_error({"OKURI_PEER_URL": "node-2:8080"})
    bound = ["http://127.0.0.1:41234"]
    assert advertised_url(None, parse_address("127.0.0.1:0"), bound) == bound[0]
    assert advertised_url("off", parse_address("127.0.0.1:0"), bound) == ""
    assert advertised_url("http://lb:1", parse_address(":8080"), bound) == "http://lb:1"
    derived = advertised_url(None, parse_address(":8080"), ["http://0.0.0.0:8080"])
    assert derived.startswith("http://") and derived.endswith(":8080")
    assert "0.0.0.0" not in derived
    secure = advertised_url(None, parse_address(":8080"), ["https://0.0.0.0:8080"])
    assert secure.startswith("https://")  # a TLS listener is reached over TLS


def test_regions_served_besides_aws_own_are_a_checked_comma_separated_list() -> None:
    assert Settings.load({}).regions == frozenset()
    s = Settings.load({"OKURI_REGIONS": " xx-private-1, ,yy-lab-2 "})
    assert s.regions == frozenset({"xx-private-1", "yy-lab-2"})
    assert Settings.load({}, flags("--regions", "xx-private-1")).regions == {"xx-private-1"}
    assert "'local' is not a region name" in load_error({"OKURI_REGIONS": "eu-west-1,local"})
    too_many = ",".join(f"xx-private-{i}" for i in range(limits.regions_configured_max + 1))
    assert f"more than {limits.regions_configured_max} regions" in load_error(
        {"OKURI_REGIONS": too_many}
    )


def test_quotas_default_to_the_documented_bounds_and_are_checked() -> None:
    s = Settings.load({})
    assert (s.queues_max, s.namespace_queues_max, s.queue_attributes_bytes_max) == (
        limits.queues_max_default,
        limits.namespace_queues_max_default,
        limits.queue_attributes_bytes_max_default,
    )
    env = {
        "OKURI_QUEUES_MAX": "50",
        "OKURI_NAMESPACE_QUEUES_MAX": "5",
        "OKURI_QUEUE_ATTRIBUTES_BYTES_MAX": "4096",
    }
    quotas = Settings.load(env).quotas
    assert (quotas.queues_max, quotas.namespace_queues_max) == (50, 5)
    assert quotas.queue_attributes_bytes_max == 4096
    assert Settings.load({}, flags("--queues-max", "7")).quotas.queues_max == 7
    assert "OKURI_QUEUES_MAX='0': must be from 1" in load_error({"OKURI_QUEUES_MAX": "0"})
    assert "expected a whole number" in load_error({"OKURI_NAMESPACE_QUEUES_MAX": "many"})
    assert "must be from 1024 to" in load_error({"OKURI_QUEUE_ATTRIBUTES_BYTES_MAX": "100"})


def test_what_unauthenticated_requests_may_hold_defaults_and_is_checked() -> None:
    s = Settings.load({})
    assert (s.unverified_bytes_max, s.sender_bytes_max, s.read_timeout_s) == (
        limits.unverified_bytes_max_default,
        limits.sender_bytes_max_default,
        limits.read_timeout_s_default,
    )
    env = {
        "OKURI_UNVERIFIED_BYTES_MAX": str(16 * 1024 * 1024),
        "OKURI_SENDER_BYTES_MAX": str(16 * 1024 * 1024),  # behind a load balancer: equal
        "OKURI_READ_TIMEOUT_S": "5",
    }
    s = Settings.load(env)
    assert (s.unverified_bytes_max, s.sender_bytes_max, s.read_timeout_s) == (
        16 * 1024 * 1024,
        16 * 1024 * 1024,
        5,
    )
    assert Settings.load({}, flags("--read-timeout-s", "9")).read_timeout_s == 9
    assert "OKURI_READ_TIMEOUT_S='0': must be from 1" in load_error({"OKURI_READ_TIMEOUT_S": "0"})
    assert f"from {limits.request_bytes_max}" in load_error({"OKURI_SENDER_BYTES_MAX": "1000"})
    over = {"OKURI_UNVERIFIED_BYTES_MAX": str(8 * 1024 * 1024), "OKURI_SENDER_BYTES_MAX": str(
        9 * 1024 * 1024
    )}
    assert "OKURI_UNVERIFIED_BYTES_MAX at most" in load_error(over)
