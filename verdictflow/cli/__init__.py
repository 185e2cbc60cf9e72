"""The ``verdictflow`` command line (:mod:`verdictflow.cli.app` assembles it)."""

from __future__ import annotations

from verdictflow.cli.app import app, main

__all__ = ["app", "main"]
