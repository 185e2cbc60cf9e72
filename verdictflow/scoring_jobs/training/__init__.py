"""Training the faithfulness model: the labelled sets it reads, the synthetic relation swaps,
and the fit (``verdictflow train-faithfulness``)."""
