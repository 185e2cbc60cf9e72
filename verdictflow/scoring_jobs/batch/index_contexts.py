"""Index a corpus's passages into the context store before any answer cites them
(``verdictflow index-contexts``).

An answer's contexts are indexed the first time they are seen, once per context digest, and
kept in the data dir's store (:mod:`verdictflow.context_store`) across restarts; a context that
is new costs ~1.8 ms of the answer that brings it, on RAG traffic whose contexts rarely recur a
third of the answer's time (docs/benchmarks.md). Where the passages a retriever returns are
known ahead (the corpus, its chunks), this job pays that cost once, offline: a worker or ``eval
answers`` on the same data dir then reads every such context back (with the store filled,
``eval answers`` on rarely recurring contexts ran at 0.63x raw ``nlp.pipe`` against 0.47x).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from verdictflow.evaluators.answer_analysis import AnswerAnalyzer
from verdictflow.nlp import parsing_batch

#: Passages indexed (and written to the store) at a time.
CHUNK = 64


def passages_of(item: Any) -> list[str] | None:
    """The passages of one input item: a string is one; an object's ``text`` (a context, a
    document update) is one; an answer event's ``contexts`` (strings or objects with ``text``)
    are each one. None when the item is none of these."""
    if isinstance(item, str):
        return [item]
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("text"), str):
        return [item["text"]]
    contexts = item.get("contexts")
    if not isinstance(contexts, list):
        return None
    found = []
    for context in contexts:
        text = context.get("text") if isinstance(context, dict) else context
        if not isinstance(text, str):
            return None
        found.append(text)
    return found


@dataclass
class Passages:
    """The distinct non-blank passages of an input, in first-seen order, and the numbers of the
    records that held none."""

    texts: list[str] = field(default_factory=list)
    bad_records: list[int] = field(default_factory=list)


def read_passages(records: Sequence[bytes]) -> Passages:
    """:func:`passages_of` each record (numbered from 1; blank ones skipped)."""
    texts: list[str] = []
    bad = []
    for number, record in enumerate(records, start=1):
        if not record.strip():
            continue
        try:
            found = passages_of(orjson.loads(record))
        except orjson.JSONDecodeError:
            found = None
        if found is None:
            bad.append(number)
        else:
            texts += [text for text in found if text.strip()]
    return Passages(list(dict.fromkeys(texts)), bad)


def index_passages(
    analyzer: AnswerAnalyzer,
    texts: Sequence[str],
    *,
    vocab_limit: int,
    done: Callable[[int], None] = lambda n: None,
) -> int:
    """Index ``texts`` through ``analyzer`` (into its store), :data:`CHUNK` at a time, each
    chunk within :func:`~verdictflow.nlp.parsing_batch` so spaCy's vocabulary stays bounded on
    a large corpus; ``done(n)`` after each chunk. Returns how many were built (not stored
    already)."""
    built = 0
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start : start + CHUNK]
        with parsing_batch(vocab_limit):
            built += analyzer.index_contexts(chunk)
        done(len(chunk))
    return built
