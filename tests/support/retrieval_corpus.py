"""A five-document corpus shared by the retriever and rq-eval tests."""

from __future__ import annotations

TEXTS = {
    "ocean-a": "The Pacific Ocean is the largest ocean on Earth.",
    "ocean-b": "The largest ocean on Earth is the Pacific, covering a third of the planet.",
    "ocean-c": "Ocean facts for kids: seas, tides, coral reefs, whales and the largest waves.",
    "bread": "Banana bread needs ripe bananas, flour, butter and sugar.",
    "kafka": "Kafka topics are split into partitions, each an ordered log.",
}
