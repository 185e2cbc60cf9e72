"""The operator console (``verdictflow console``): a live web page over the verdict,
dead-letter, alert and document-quality topics, read outside any consumer group.

Layers, each testable alone:

- :mod:`~verdictflow.console.highlight`: pure; which spans of an answer a verdict's evidence
  marks (unsupported, partial, supported anchors and faithfulness findings) and the answer cut
  into segments along them.
- :mod:`~verdictflow.console.state`: the console's memory: sliding-window counts and score
  histograms per kind, model and tenant; the latest failures, alerts, dead letters and quality
  rows; all bounded.
- :mod:`~verdictflow.console.follower`: the Kafka reader that feeds the state.
- :mod:`~verdictflow.console.app`: the FastAPI app (the page, a server-sent event stream, the
  evidence of one verdict, a ``/search`` proxy).
"""
