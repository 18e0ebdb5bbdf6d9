"""Which region a queue URL names (okuri.sqs.queue_urls), and SqsActions refusing another's."""

from __future__ import annotations

import pytest

from okuri.sqs.actions import SqsActions
from okuri.sqs.aws_regions import AWS_REGIONS
from okuri.sqs.errors import SqsError
from okuri.sqs.queue_urls import REGION, regions_named


@pytest.mark.parametrize(
    ("url", "regions"),
    [
        ("http://127.0.0.1:9324/000000000000/jobs", set()),
        ("http://127.0.0.1:9324/eu-west-1/000000000000/jobs", {"eu-west-1"}),
        ("http://okuri/eu-central-2/000000000000/jobs.fifo?x=1", {"eu-central-2"}),
        ("/eu-west-1/000000000000/jobs", {"eu-west-1"}),
        ("/000000000000/jobs", set()),
        ("jobs", set()),
        ("https://sqs.eu-west-1.amazonaws.com/123456789012/jobs", {"eu-west-1"}),
        ("https://SQS.EU-WEST-1.AMAZONAWS.COM/123456789012/jobs", {"eu-west-1"}),
        ("https://sqs-fips.us-gov-west-1.amazonaws.com/123456789012/jobs", {"us-gov-west-1"}),
        ("https://ap-south-1.queue.amazonaws.com/123456789012/jobs", {"ap-south-1"}),
        ("https://sqs.cn-north-1.amazonaws.com.cn/123456789012/jobs", {"cn-north-1"}),
        ("https://queue.amazonaws.com/123456789012/jobs", {"us-east-1"}),
        (
            "https://sqs.us-east-1.amazonaws.com/eu-west-1/123456789012/jobs",
            {"us-east-1", "eu-west-1"},
        ),
        ("http://okuri/eusc-de-east-1/000000000000/jobs", {"eusc-de-east-1"}),
        ("http://sqs.eu-west-1.example.com/000000000000/jobs", set()),  # not SQS's host
        ("http://[::1/000000000000/jobs", set()),  # unparsable: names nothing
    ],
)
def test_the_regions_a_queue_url_names(url: str, regions: set[str]) -> None:
    assert regions_named(url) == regions


def test_every_region_aws_has_is_of_the_form_a_queue_url_is_read_for() -> None:
    """A queue URL of any region okuri serves names that region (okuri.sqs.aws_regions)."""
    for region in AWS_REGIONS:
        assert REGION.fullmatch(region), region
        assert regions_named(f"http://okuri/{region}/000000000000/jobs") == {region}


def test_a_public_url_whose_path_looks_like_a_region_names_none() -> None:
    base = "https://okuri.example/eu-west-1"
    assert regions_named(f"{base}/000000000000/jobs", base) == set()
    assert regions_named(f"{base}/ap-south-1/000000000000/jobs", base) == {"ap-south-1"}
    assert regions_named(f"{base}x/000000000000/jobs", base) == set()  # not under the base


def _actions(region: str, public_url: str | None = None) -> SqsActions:
    return SqsActions(engine=None, region=region, public_url=public_url)  # type: ignore[arg-type]


def test_actions_refuse_another_regions_queue_url_as_a_missing_queue() -> None:
    home = _actions("us-east-1")
    assert home.queue_name("http://h/000000000000/jobs") == "jobs"
    assert home.queue_name("https://sqs.us-east-1.amazonaws.com/1/jobs") == "jobs"
    assert home.queue_name("http://h/us-east-1/000000000000/jobs") == "jobs"
    for url in (
        "http://h/eu-west-1/000000000000/jobs",
        "https://sqs.eu-west-1.amazonaws.com/1/jobs",
    ):
        with pytest.raises(SqsError) as err:
            home.queue_name(url)
        assert (err.value.code, err.value.message) == (
            "QueueDoesNotExist",
            "The specified queue does not exist.",
        )
    assert SqsActions.name_in_url("http://h/eu-west-1/000000000000/jobs") == "jobs"
    assert _actions("eu-west-1").queue_name("http://h/eu-west-1/000000000000/jobs") == "jobs"


def test_a_home_region_that_is_no_aws_region_refuses_every_named_region() -> None:
    local = _actions("local")
    assert local.queue_name("http://h/000000000000/jobs") == "jobs"
    with pytest.raises(SqsError):
        local.queue_name("http://h/us-east-1/000000000000/jobs")
