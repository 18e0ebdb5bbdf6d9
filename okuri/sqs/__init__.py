"""The SQS surface: SigV4, wire codecs, actions and the one table of AWS error codes."""
