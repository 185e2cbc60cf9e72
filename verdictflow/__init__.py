"""verdictflow: streaming evaluation of LLM traffic on Kafka.

Pure scoring code lives in :mod:`verdictflow.evaluators`; Faust agents, the API and the offline
jobs are thin drivers around it, so a verdict computed on the stream and one computed offline
from the same input and policy are byte-identical.
"""

__version__ = "0.1.0"
