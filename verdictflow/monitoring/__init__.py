"""Monitoring consumers of the verdict topics (``verdictflow monitor``)."""
