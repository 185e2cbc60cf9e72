"""verdictflow: streaming evaluation of LLM traffic on Kafka.

Pure scoring code lives in :mod:`verdictflow.evaluators`; Faust agents, the API and the offline
jobs are thin drivers around it, so a verdict computed on the stream and one computed offline
from the same input and policy are byte-identical.
"""

from verdictflow import compiled_scorers

__version__ = "0.1.0"

# Before any scorer is imported: the lexical scorers' compiled build, when it matches the
# sources (verdictflow/compiled_scorers.py).
compiled_scorers.activate()
