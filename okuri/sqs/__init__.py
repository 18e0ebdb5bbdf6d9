"""The SQS surface: SigV4, access by role and namespace, wire codecs, actions and the one table
of AWS error codes."""
