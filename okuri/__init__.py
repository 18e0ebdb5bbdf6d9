"""okuri: a job queue whose only durable state lives in an S3-compatible bucket."""

__version__ = "0.0.1"

__all__ = ["__version__"]
