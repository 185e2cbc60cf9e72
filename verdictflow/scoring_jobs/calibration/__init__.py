"""Calibration: thresholds fitted to labelled data per kind (ROC / DET, cost, margin) and the
report that shows them (``verdictflow calibrate``)."""
