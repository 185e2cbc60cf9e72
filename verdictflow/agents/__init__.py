"""Faust agents, one module per input stream. Each is a thin loop around pure evaluators."""
