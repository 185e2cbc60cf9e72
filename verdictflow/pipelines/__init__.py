"""Driver-neutral pipelines: records in, outputs out.

Each function takes the records of an input topic (or lines of a file, as records) and returns
the ``(topic, key, value)`` outputs each record gives: verdicts, dead letters, internal
messages. The Faust agents send them; the offline commands (``eval answers``, ``eval
summaries``, ``calibrate``) write them or feed them on in memory. Nothing here imports Faust,
which is what keeps a streamed verdict and an offline one byte-identical and the offline
commands free of the stream runtime (``tests/test_imports.py``).
"""

from __future__ import annotations

#: One output: the topic (without the deployment's prefix), the record key, the value.
Output = tuple[str, str, bytes]
