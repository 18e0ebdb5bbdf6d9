"""boto3 example programs that run unmodified against okuri, and the runner that runs them.

The examples are standalone scripts a user would copy; nothing here is imported by okuri.
"""
