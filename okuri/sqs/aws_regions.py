"""The regions AWS itself has: the names a request may be signed for besides those configured.

A credential scope naming any other region is refused as AWS refuses it (okuri.sqs.sigv4_errors
`invalid_region`), so the regions okuri serves are a fixed set, never invented by a client: the
set bounds the engines one node runs for them (okuri/server/regions.py).

Source: botocore 1.43.117's data/endpoints.json, every partition's `regions` (aws, aws-cn,
aws-us-gov, aws-iso, aws-iso-b, aws-iso-e, aws-iso-f, aws-eusc); SQS has an endpoint in each.
A region AWS opens later is served once an operator names it in OKURI_REGIONS (or this list is
brought up to date).
"""

from __future__ import annotations

from typing import Final

AWS_REGIONS: Final = frozenset(
    {
        # aws
        "af-south-1",
        "ap-east-1",
        "ap-east-2",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ap-southeast-5",
        "ap-southeast-6",
        "ap-southeast-7",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "mx-central-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
        # aws-cn
        "cn-north-1",
        "cn-northwest-1",
        # aws-us-gov
        "us-gov-east-1",
        "us-gov-west-1",
        # aws-iso, aws-iso-b, aws-iso-e, aws-iso-f
        "us-iso-east-1",
        "us-iso-west-1",
        "us-isob-east-1",
        "us-isob-west-1",
        "eu-isoe-west-1",
        "us-isof-east-1",
        "us-isof-south-1",
        # aws-eusc
        "eusc-de-east-1",
    }
)
