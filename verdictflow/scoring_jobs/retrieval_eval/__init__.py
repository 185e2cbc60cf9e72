"""The retrieval A/B harness (``verdictflow rq-eval``): inputs, configured systems, TREC
files and the evaluation."""
