"""What every HTTP listener shares (the search API, the console, ingest): the error shape, the
bearer-token guard, and the rule that nothing listens beyond loopback without a token."""
