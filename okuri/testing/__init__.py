"""Testing your application against okuri: a real okuri per test session, emptied between
tests (docs/testing.md).

Under pytest, installing okuri is enough: its plugin (okuri.testing.pytest_plugin, registered
through the `pytest11` entry point) offers the fixtures `okuri_server`, `okuri_sqs`,
`okuri_client`, `okuri_env` and the Celery configurations. Elsewhere (unittest, scripts),
`serve()` is a context manager and a decorator, as moto's `mock_aws` is:

    with okuri.testing.serve() as okuri:         # AWS_* variables point at it inside
        boto3.client("sqs").create_queue(QueueName="orders")

This package imports nothing of the server, boto3 or httpx until a server is asked for.
"""

from okuri.testing.celery import celery_config
from okuri.testing.environ import aws_environ
from okuri.testing.server import OkuriServer, UrlInvalid, external, in_process
from okuri.testing.serving import Serving, external_from_environ, serve

__all__ = [
    "OkuriServer",
    "Serving",
    "UrlInvalid",
    "aws_environ",
    "celery_config",
    "external",
    "external_from_environ",
    "in_process",
    "serve",
]
