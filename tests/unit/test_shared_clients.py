"""The third-party clients no registry serves (compat/clients): where they are looked for, and
skip reasons that name what is missing and how to get it, as the README's Set up does.

A fresh clone has neither AWS's boto3 SQS examples nor the AWS SDK for PHP beside it, so their
live tests skip there; a reason that only says "missing" leaves the reader nowhere to go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import compat.clients as clients
from tests.readme import README

EXAMPLES_REMEDY = (
    clients.AWS_EXAMPLES_REPOSITORY,
    clients.AWS_EXAMPLES_COMMIT[:12],
    "../shared/clients/aws-doc-sdk-examples",
    clients.AWS_EXAMPLES_VARIABLE,
)
SDK_PHP_REMEDY = (
    "composer require aws/aws-sdk-php",
    clients.AWS_SDK_PHP_VARIABLE,
    "../shared/clients/aws-sdk-php/vendor",
    "composer install",
)


def test_both_are_looked_for_beside_the_checkout_unless_a_variable_says_where() -> None:
    shared = clients.ROOT.parent / "shared" / "clients"
    assert clients.aws_examples({}) == shared / "aws-doc-sdk-examples/python/example_code/sqs"
    assert clients.aws_sdk_php({}) == shared / "aws-sdk-php" / "vendor"
    elsewhere = {clients.AWS_EXAMPLES_VARIABLE: "/x", clients.AWS_SDK_PHP_VARIABLE: "/y"}
    assert clients.aws_examples(elsewhere) == Path("/x/python/example_code/sqs")
    assert clients.aws_sdk_php(elsewhere) == Path("/y")


def test_missing_examples_name_the_repository_commit_and_where_to_put_them(
    tmp_path: Path,
) -> None:
    why = clients.aws_examples_missing({clients.AWS_EXAMPLES_VARIABLE: str(tmp_path)})
    assert why is not None and why.startswith("AWS's boto3 SQS examples are missing")
    assert [r for r in EXAMPLES_REMEDY if r not in why] == []


def test_examples_found_where_the_variable_points_are_not_missing(tmp_path: Path) -> None:
    (tmp_path / "python/example_code/sqs/test").mkdir(parents=True)
    (tmp_path / "python/test_tools").mkdir()
    assert clients.aws_examples_missing({clients.AWS_EXAMPLES_VARIABLE: str(tmp_path)}) is None


def test_a_missing_php_sdk_names_composer_and_where_the_app_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(clients, "ROOT", tmp_path / "checkout")  # no composer vendor/ in the app
    why = clients.laravel_sdk_missing({clients.AWS_SDK_PHP_VARIABLE: str(tmp_path / "none")})
    assert why is not None and why.startswith("the AWS SDK for PHP is missing")
    assert [r for r in SDK_PHP_REMEDY if r not in why] == []


def test_a_php_sdk_where_the_variable_points_is_found_and_handed_to_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's environments drop AWS_* variables, so the folder is handed over explicitly."""
    monkeypatch.setattr(clients, "ROOT", tmp_path / "checkout")
    vendor = tmp_path / "vendor"
    (vendor / "aws/aws-sdk-php/src").mkdir(parents=True)
    (vendor / "aws/aws-sdk-php/src/Sdk.php").write_text("<?php\n")
    environ = {clients.AWS_SDK_PHP_VARIABLE: str(vendor)}
    assert clients.laravel_sdk_missing(environ) is None
    assert clients.laravel_loader_environ(environ) == {clients.AWS_SDK_PHP_VARIABLE: str(vendor)}
    laravel = clients.CLIENTS["laravel"]
    assert laravel.environ is clients.laravel_loader_environ


def test_the_readme_set_up_names_the_same_remedies() -> None:
    set_up = README.read_text().split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    assert [r for r in (*EXAMPLES_REMEDY, *SDK_PHP_REMEDY) if r not in set_up] == []
