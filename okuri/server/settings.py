"""Server settings: environment variables, overridden by command-line flags, all checked up front.

The composition root reads configuration here and nowhere else, so a typo fails at start-up with
one line naming the variable or flag (exit code 2), not as a traceback from inside a listener or
the store. Each option is one row of `OPTIONS`: its variable is OKURI_<NAME> and its flag
--<name>, so the two spellings cannot drift apart. An empty variable counts as unset, because
compose files and shells produce `OKURI_X=` far more often than anyone means "empty".
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from okuri import limits
from okuri.engine import Quotas
from okuri.principals.local import is_local_host
from okuri.sqs.queue_urls import REGION

# Local development only: the SQS surface accepts this pair unless told otherwise, so that
# `okuri serve` plus an SDK pointed at it works out of the box. Never use it on a shared network.
DEV_ACCESS_KEY_ID = "okuri"
DEV_SECRET_ACCESS_KEY = "okuri-local-secret"

# A linger longer than this holds every send for seconds: surely a unit mistake (s for ms).
LINGER_MS_MAX = limits.linger_ms_max
LOCAL_LAYOUTS = ("auto", "journal", "files")  # okuri/store/directory.py's LAYOUTS

# Options whose values are never shown: not in repr, help defaults or error messages.
SECRETS = ("secret_access_key", "s3_secret_access_key", "admin_key")
ADMIN_KEY_CHARS_MIN = 16

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
LOG_FORMATS = ("text", "json")

_INTEGER = re.compile(r"[+-]?[0-9]+")
_PORT = re.compile(r"[0-9]{1,5}")
_REGION = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ACCOUNT_ID = re.compile(r"[0-9]{12}")


class SettingsError(ValueError):
    """A setting that cannot be used; the message is one line naming where the value came from."""


@dataclass(frozen=True, slots=True)
class Option:
    name: str
    default: str | None
    help: str
    metavar: str = "VALUE"

    @property
    def env(self) -> str:
        return "OKURI_" + self.name.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("listen", "127.0.0.1:8080",
           "SQS listener, HOST:PORT (loopback by default; ':8080' is every interface)",
           "HOST:PORT"),
    Option("health_listen", "127.0.0.1:9090", "health and metrics listener, HOST:PORT",
           "HOST:PORT"),
    Option("data_dir", "./okuri-data", "local store directory (used when no S3 bucket is set)",
           "DIR"),
    Option("local_store", "auto",
           "how a local directory holds objects: journal (one file, synced once per group of "
           "writes), files (a file per object), or auto (what the directory holds; a new one "
           "gets the journal)", "auto|journal|files"),
    Option("linger_ms", None,
           f"how long sends and commits wait to share one object write (0 to {LINGER_MS_MAX}; "
           f"default {limits.linger_ms_default} on S3, {limits.linger_ms_local_default} on a "
           "local directory)", "MS"),
    Option("s3_endpoint", None, "S3 endpoint URL (MinIO, Ceph, ...); unset means AWS", "URL"),
    Option("s3_bucket", None, "S3 bucket; when set, the S3 store is used instead of --data-dir",
           "BUCKET"),
    Option("s3_region", "us-east-1", "S3 region", "REGION"),
    Option("s3_access_key_id", None, "S3 access key id; unset means the AWS default chain", "KEY"),
    Option("s3_secret_access_key", None,
           "S3 secret key (prefer the environment variable: flags show up in ps)", "SECRET"),
    Option("s3_prefix", "", "key prefix inside the bucket", "PREFIX"),
    Option("access_key_id", DEV_ACCESS_KEY_ID,
           "access key id SQS clients sign with, an admin of every queue (the default is for "
           "local development only)",
           "KEY"),
    Option("secret_access_key", DEV_SECRET_ACCESS_KEY,
           "secret SQS clients sign with (the default is for local development only)", "SECRET"),
    Option("public_url", None, "URL clients reach this server at, for queue URLs", "URL"),
    Option("peer_url", None,
           "URL other okuri nodes on the same store reach this one's listener at, to forward "
           "their commits to it; 'off' never to lead (default: the listen address when it "
           "names a host, else this host's address)", "URL|off"),
    Option("ack_logs", "auto",
           "a node that forwards its commits answers deletes once they are in a log object of "
           "its own, without waiting for the leader: 'on', 'off', or 'auto' (on for a local "
           "directory, off on S3, where each lease would cost one PUT more)", "auto|on|off"),
    Option("lanes", "on",
           "a node whose producers meet another node's in a standard queue's slot log opens a "
           "lane of its own (its own slot log and manifest): 'on', or 'off' to keep writing the "
           "queue's shared log (lanes other nodes opened are served either way)", "on|off"),
    Option("fifo_partitions", "off",
           "'on': a FIFO queue created in SQS's high-throughput mode (DeduplicationScope "
           "messageGroup, FifoThroughputLimit perMessageGroupId) spreads its message groups over "
           "8 partitions, each its own log, so it grows with the nodes; its SequenceNumber then "
           "grows within each group (SQS's promise), not across groups. 'off': one log",
           "on|off"),
    Option("region", "us-east-1", "region reported in queue URLs and ARNs", "REGION"),
    Option("regions", None,
           "comma-separated regions served besides AWS's own and --region, in AWS's form "
           f"(e.g. xx-private-1; at most {limits.regions_configured_max}); a request signed "
           "for any other region is refused", "REGION,..."),
    Option("account_id", "000000000000", "12-digit account id reported in queue URLs and ARNs",
           "ID"),
    Option("log_level", "info", "one of " + ", ".join(LOG_LEVELS), "LEVEL"),
    Option("log_format", "text",
           "'text' lines for people, or 'json': one JSON object per line for log pipelines, "
           "with an access record per request", "text|json"),
    Option("auth", "on", "SigV4 signature and bearer key checks: 'on', or 'off' for local "
           "experiments only", "on|off"),
    Option("admin_key", None,
           "one admin bearer key for the native API (at least 16 characters; prefer the "
           "environment variable: flags show up in ps)", "KEY"),
    Option("api_keys_file", None,
           "JSON file of keys with roles and namespaces: hashed native API keys and SQS access "
           "keys, whose secrets it holds, so keep it mode 0600 (`okuri keys create [--sqs]` "
           "writes it; reloaded on SIGHUP)", "FILE"),
    Option("inflight_requests_max", str(limits.inflight_requests_max_default),
           "requests this node handles at once, every surface and long polls included; past it "
           "a request is refused with the surface's throttle answer", "N"),
    Option("inflight_bytes_max", str(limits.inflight_bytes_max_default),
           "request body bytes this node holds at once (at least "
           f"{limits.request_bytes_max}, one largest request); past it requests are refused",
           "BYTES"),
    Option("long_polls_max", str(limits.long_polls_max_default),
           "receives and leases waiting for messages at once, below --inflight-requests-max; "
           "past it a long poll is refused", "N"),
    Option("unverified_bytes_max", str(limits.unverified_bytes_max_default),
           "body bytes this node holds, as they arrive, for requests not yet authenticated "
           "(SigV4 signs the body, so it is read first); past it they are refused", "BYTES"),
    Option("sender_bytes_max", str(limits.sender_bytes_max_default),
           "of those, what one sending address (an IPv6 /64) may hold; behind a load balancer "
           "that hides clients' addresses, set it equal to --unverified-bytes-max", "BYTES"),
    Option("read_timeout_s", str(limits.read_timeout_s_default),
           "a request's headers must be whole within this long of their first byte, and its "
           f"body may pause this long at most (and must be whole within {limits.body_s_max:g} "
           "s); past either the connection is closed", "SECONDS"),
    Option("tls_cert", None,
           "PEM certificate chain: the main listener speaks TLS on every surface (with "
           "--tls-key; reloaded on SIGHUP)", "FILE"),
    Option("tls_key", None, "PEM private key of --tls-cert", "FILE"),
    Option("tls_client_ca", None,
           "PEM authorities whose client certificates the main listener requires (mutual TLS; "
           "needs --tls-cert)", "FILE"),
    Option("queues_max", str(limits.queues_max_default),
           "queues a region may hold in all: a create past it is refused (SQS OverLimit, native "
           "403 quota_exceeded), re-declaring an existing queue never is", "N"),
    Option("namespace_queues_max", str(limits.namespace_queues_max_default),
           "queues a key limited to a namespace may have in that namespace (per region)", "N"),
    Option("queue_attributes_bytes_max", str(limits.queue_attributes_bytes_max_default),
           "bytes of the attributes one queue stores verbatim: tags, Policy, "
           f"RedriveAllowPolicy, KmsMasterKeyId ({limits.queue_attributes_bytes_max_floor} to "
           f"{limits.queue_attributes_bytes_max_ceiling})", "BYTES"),
    Option("expiry_sweep_s", str(limits.expiry_sweep_s_default),
           "how often (+-25 %) this node looks for queues past their expires_s that nobody "
           f"reads any more (1 to {limits.expiry_sweep_s_max})", "SECONDS"),
)  # fmt: skip

_BY_NAME = {option.name: option for option in OPTIONS}


@dataclass(frozen=True, slots=True)
class Address:
    """Where a listener binds; `host` None means every interface (IPv4 and IPv6)."""

    host: str | None
    port: int

    def __str__(self) -> str:
        if self.host is None:
            return f":{self.port}"
        if ":" in self.host:
            return f"[{self.host}]:{self.port}"
        return f"{self.host}:{self.port}"


def parse_address(text: str) -> Address:
    """HOST:PORT, [IPv6]:PORT, or :PORT; raises ValueError saying what is wrong."""
    text = text.strip()
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1 : close + 2] != ":":
            raise ValueError("expected [IPV6]:PORT, e.g. [::1]:8080")
        host, port_text = text[1:close], text[close + 2 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{host!r} in brackets is not an IPv6 address") from None
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise ValueError("expected HOST:PORT, e.g. 127.0.0.1:8080 or :8080")
        if any(c.isspace() or c in "/@?#[]" for c in host):
            raise ValueError(f"{host!r} is not a host name or address")
        if ":" in host:
            raise ValueError("write an IPv6 host in brackets, e.g. [::1]:8080")
    if not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise ValueError(f"port {port_text!r} is not a number from 0 to 65535")
    return Address(host if host not in ("", "*") else None, int(port_text))


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server is configured with; build it with `Settings.load`, the one place
    defaults live. Secrets are left out of repr so a logged Settings cannot leak them."""

    listen: Address
    health_listen: Address
    data_dir: str
    linger_ms: int
    s3_endpoint: str | None
    s3_bucket: str | None
    s3_region: str
    s3_access_key_id: str | None
    s3_secret_access_key: str | None = field(repr=False)
    s3_prefix: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    public_url: str | None
    peer_url: str | None  # None: derived from the listener; "off": never lead
    region: str
    account_id: str
    log_level: str
    log_format: str = "text"
    auth: bool = True
    admin_key: str | None = field(default=None, repr=False)
    api_keys_file: str | None = None
    inflight_requests_max: int = limits.inflight_requests_max_default
    inflight_bytes_max: int = limits.inflight_bytes_max_default
    long_polls_max: int = limits.long_polls_max_default
    unverified_bytes_max: int = limits.unverified_bytes_max_default
    sender_bytes_max: int = limits.sender_bytes_max_default
    read_timeout_s: int = limits.read_timeout_s_default
    expiry_sweep_s: int = limits.expiry_sweep_s_default
    ack_logs: bool = False
    lanes: bool = True
    fifo_partitions: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_client_ca: str | None = None
    regions: frozenset[str] = frozenset()  # served besides AWS's own and `region`
    queues_max: int = limits.queues_max_default
    namespace_queues_max: int = limits.namespace_queues_max_default
    queue_attributes_bytes_max: int = limits.queue_attributes_bytes_max_default
    local_store: str = "auto"  # okuri/store/directory.py: auto, journal or files

    @property
    def quotas(self) -> Quotas:
        return Quotas(self.queues_max, self.namespace_queues_max, self.queue_attributes_bytes_max)

    @property
    def uses_s3(self) -> bool:
        return self.s3_bucket is not None

    @property
    def uses_dev_credentials(self) -> bool:
        return self.secret_access_key == DEV_SECRET_ACCESS_KEY

    @property
    def uses_dev_admin_key(self) -> bool:
        """No native key configured at all, with authentication on: the published development
        key (okuri.principals.local) opens the native API and the console to loopback clients."""
        return self.auth and self.admin_key is None and self.api_keys_file is None

    @property
    def listens_on_loopback(self) -> bool:
        """Whether the main listener is bound to loopback only."""
        return is_local_host(self.listen.host)

    def describe_store(self) -> str:
        """The store in use, for the start-up log line; never includes a secret."""
        if self.s3_bucket is None:
            return f"local directory {os.path.abspath(self.data_dir)}"
        prefix = self.s3_prefix.strip("/")
        where = self.s3_endpoint or "AWS"
        return f"s3://{self.s3_bucket}/{prefix} at {where} (region {self.s3_region})"

    @classmethod
    def load(
        cls, environ: Mapping[str, str], flags: Mapping[str, object] | None = None
    ) -> Settings:
        """Settings from `environ`, overridden by `flags` (argparse's vars(); None: not given)."""
        raw = _Raw(environ, flags or {})
        s3_names = ("s3_endpoint", "s3_access_key_id", "s3_secret_access_key", "s3_prefix")
        bucket = raw.optional("s3_bucket")
        if bucket is None:
            given = [_BY_NAME[n] for n in s3_names if raw.optional(n)]
            if given:
                raise SettingsError(
                    f"{raw.source(given[0].name)} is set but OKURI_S3_BUCKET is not: set the "
                    "bucket to use S3, or unset the S3 settings to use the local directory store"
                )
        key_id, secret = raw.optional("s3_access_key_id"), raw.optional("s3_secret_access_key")
        if (key_id is None) != (secret is None):
            raise SettingsError(
                "set both OKURI_S3_ACCESS_KEY_ID and OKURI_S3_SECRET_ACCESS_KEY, or neither "
                "(to use the AWS default credential chain)"
            )
        tls_cert, tls_key = raw.optional("tls_cert"), raw.optional("tls_key")
        if (tls_cert is None) != (tls_key is None):
            raise SettingsError(
                "set both OKURI_TLS_CERT and OKURI_TLS_KEY for TLS on the main listener, "
                "or neither for plaintext"
            )
        if tls_cert is None and raw.optional("tls_client_ca") is not None:
            raise SettingsError(
                "OKURI_TLS_CLIENT_CA is set but OKURI_TLS_CERT and OKURI_TLS_KEY are not: "
                "client certificates are checked only on a TLS listener"
            )
        listen, health = raw.address("listen"), raw.address("health_listen")
        if listen == health and listen.port != 0:
            raise SettingsError(f"OKURI_LISTEN and OKURI_HEALTH_LISTEN are both {listen}")
        requests_max = raw.integer(
            "inflight_requests_max", 2, limits.inflight_requests_max_ceiling, "requests"
        )
        bytes_max = raw.integer(
            "inflight_bytes_max",
            limits.request_bytes_max,
            limits.inflight_bytes_max_ceiling,
            "bytes (one largest request at least)",
        )
        long_polls_max = raw.integer(
            "long_polls_max",
            1,
            requests_max - 1,
            f"long polls: below {raw.named('inflight_requests_max')}={requests_max}, so that "
            "waiting consumers leave room for other requests",
        )
        unverified_max = raw.integer(
            "unverified_bytes_max",
            limits.request_bytes_max,
            limits.inflight_bytes_max_ceiling,
            "bytes (one largest request at least)",
        )
        sender_max = raw.integer(
            "sender_bytes_max",
            limits.request_bytes_max,
            unverified_max,
            f"bytes: one largest request at least, {raw.named('unverified_bytes_max')} at most",
        )
        return cls(
            listen=listen,
            health_listen=health,
            data_dir=os.path.expanduser(raw.required("data_dir")),
            local_store=raw.choice("local_store", LOCAL_LAYOUTS),
            linger_ms=(
                raw.integer("linger_ms", 0, LINGER_MS_MAX, "milliseconds")
                if raw.optional("linger_ms") is not None
                else limits.linger_ms_default
                if bucket is not None
                else limits.linger_ms_local_default
            ),
            s3_endpoint=raw.url("s3_endpoint"),
            s3_bucket=bucket,
            s3_region=raw.matching("s3_region", _REGION, "a region name such as us-east-1"),
            s3_access_key_id=key_id,
            s3_secret_access_key=secret,
            s3_prefix=raw.optional("s3_prefix") or "",
            access_key_id=raw.required("access_key_id"),
            secret_access_key=raw.required("secret_access_key"),
            public_url=raw.url("public_url"),
            peer_url=(
                "off" if (raw.optional("peer_url") or "").lower() == "off" else raw.url("peer_url")
            ),
            region=raw.matching("region", _REGION, "a region name such as us-east-1"),
            account_id=raw.matching("account_id", _ACCOUNT_ID, "exactly 12 digits"),
            regions=raw.regions("regions"),
            queues_max=raw.integer("queues_max", 1, limits.queues_max_ceiling, "queues"),
            namespace_queues_max=raw.integer(
                "namespace_queues_max", 1, limits.queues_max_ceiling, "queues"
            ),
            queue_attributes_bytes_max=raw.integer(
                "queue_attributes_bytes_max",
                limits.queue_attributes_bytes_max_floor,
                limits.queue_attributes_bytes_max_ceiling,
                "bytes",
            ),
            log_level=raw.choice("log_level", LOG_LEVELS),
            log_format=raw.choice("log_format", LOG_FORMATS),
            auth=raw.choice("auth", ("on", "off")) == "on",
            admin_key=raw.secret("admin_key", ADMIN_KEY_CHARS_MIN),
            api_keys_file=raw.optional("api_keys_file"),
            inflight_requests_max=requests_max,
            inflight_bytes_max=bytes_max,
            long_polls_max=long_polls_max,
            unverified_bytes_max=unverified_max,
            sender_bytes_max=sender_max,
            read_timeout_s=raw.integer(
                "read_timeout_s", 1, limits.read_timeout_s_max, "seconds"
            ),
            expiry_sweep_s=raw.integer("expiry_sweep_s", 1, limits.expiry_sweep_s_max, "seconds"),
            ack_logs={"on": True, "off": False, "auto": bucket is None}[
                raw.choice("ack_logs", ("auto", "on", "off"))
            ],
            lanes=raw.choice("lanes", ("on", "off")) == "on",
            fifo_partitions=raw.choice("fifo_partitions", ("off", "on")) == "on",
            tls_cert=tls_cert,
            tls_key=tls_key,
            tls_client_ca=raw.optional("tls_client_ca"),
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per option, defaulting to None so `Settings.load` can tell "not given" apart."""
    for option in OPTIONS:
        default = "" if option.default is None else f" (default {option.default!r})"
        if option.name in SECRETS:
            default = ""  # the dev secret is documented, but help text need not repeat it
        parser.add_argument(
            option.flag,
            dest=option.name,
            default=None,
            metavar=option.metavar,
            # argparse formats help with %: a literal one in the text must reach it doubled.
            help=f"{option.help}; env {option.env}{default}".replace("%", "%%"),
        )


class _Raw:
    """The winning text of each option and where it came from, for error messages."""

    def __init__(self, environ: Mapping[str, str], flags: Mapping[str, object]) -> None:
        self._environ = environ
        self._flags = flags

    def _lookup(self, name: str) -> tuple[str | None, str]:
        option = _BY_NAME[name]
        flag = self._flags.get(name)
        if isinstance(flag, str):
            return flag, option.flag
        env = self._environ.get(option.env)
        if env is not None and env.strip():
            return env, option.env
        return option.default, "default"

    def source(self, name: str) -> str:
        return self._lookup(name)[1]

    def named(self, name: str) -> str:
        """The flag or variable a value came from, the variable for a default."""
        source = self.source(name)
        return _BY_NAME[name].env if source == "default" else source

    def _fail(self, name: str, why: str) -> SettingsError:
        value, source = self._lookup(name)
        if source == "default":
            source = _BY_NAME[name].env
        value_text = "" if value is None else value
        if name in SECRETS:
            value_text = "***"
        return SettingsError(f"{source}={value_text!r}: {why}")

    def optional(self, name: str) -> str | None:
        value = self._lookup(name)[0]
        return value.strip() if value is not None and value.strip() else None

    def secret(self, name: str, chars_min: int) -> str | None:
        value = self.optional(name)
        if value is not None and (len(value) < chars_min or any(c.isspace() for c in value)):
            raise self._fail(name, f"must be at least {chars_min} characters, without spaces")
        return value

    def required(self, name: str) -> str:
        value = self.optional(name)
        if value is None:
            raise self._fail(name, "must not be empty")
        return value

    def address(self, name: str) -> Address:
        try:
            return parse_address(self.required(name))
        except ValueError as err:
            raise self._fail(name, str(err)) from None

    def integer(self, name: str, low: int, high: int, unit: str) -> int:
        text = self.required(name)
        if not _INTEGER.fullmatch(text):
            raise self._fail(name, f"expected a whole number of {unit}")
        value = int(text)
        if not low <= value <= high:
            raise self._fail(name, f"must be from {low} to {high} {unit}")
        return value

    def url(self, name: str) -> str | None:
        text = self.optional(name)
        if text is None:
            return None
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018  # raises ValueError for a bad port
        except ValueError:
            raise self._fail(name, "expected an http:// or https:// URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self._fail(name, "expected an http:// or https:// URL")
        return text.rstrip("/")

    def matching(self, name: str, pattern: re.Pattern[str], expected: str) -> str:
        text = self.required(name)
        if not pattern.fullmatch(text):
            raise self._fail(name, f"expected {expected}")
        return text

    def regions(self, name: str) -> frozenset[str]:
        """A comma-separated list of region names in AWS's form (none when unset)."""
        names = [n.strip() for n in (self.optional(name) or "").split(",") if n.strip()]
        for region in names:
            if not REGION.fullmatch(region):
                raise self._fail(name, f"{region[:80]!r} is not a region name such as eu-west-1")
        if len(set(names)) > limits.regions_configured_max:
            raise self._fail(name, f"names more than {limits.regions_configured_max} regions")
        return frozenset(names)

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        text = self.required(name).lower()
        if text not in choices:
            raise self._fail(name, "expected one of " + ", ".join(choices))
        return text
