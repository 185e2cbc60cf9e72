"""How a claim checker reads long documents (issue 43): contexts cut into chunks that fit the
model's window, each claim sent to its best chunks only, and the probabilities aggregated per
claim and per answer. Pure: the model is the caller's (training and the judge tier's local
backend share these functions, so the checker is trained on the pairs it will be asked).

- **Chunks**: consecutive sentences packed up to :data:`CHUNK_WORDS` words (a longer sentence
  is cut by words), so a (chunk, claim) pair fits 256 word pieces with room for the claim.
- **Pre-selection**: a claim goes to the :data:`TOP_CHUNKS` chunks that share the most of its
  content words (lowercased, stop words out; ties to the earlier chunk): retrieval, never a
  label, and cheap enough to run on every pair.
- **Aggregation**: a claim's probability is its best chunk's (support anywhere in the
  documents is support: SummaC's and AlignScore's document-level lesson); an answer's is its
  weakest claim's, and its verdict the share of claims supported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from verdictflow.evaluators.tokenize import stop_words

CHUNK_WORDS = 150
TOP_CHUNKS = 3
#: Words of a claim kept (a longer "claim" is a paragraph the splitter could not cut).
CLAIM_WORDS = 60
#: How a (chunk, claim) pair longer than the window is cut, by the trainer and the backend
#: alike: the longer of the two loses a word piece at a time. Cutting the chunk alone
#: ("only_first") raised on a claim that fills the window by itself, which words do not bound
#: (an unspaced Chinese sentence, a URL, code): the answer got no judge verdict. The two differ
#: only where the claim outgrows what is left of the chunk (over 126 of 256 pieces): no pair of
#: the held-out sets, whose longest claim has 107.
PAIR_TRUNCATION = "longest_first"
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of one context: ``text`` is ``context[start:end]``."""

    context: int
    start: int
    end: int
    text: str


def sentence_spans(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _SENTENCE.finditer(text):
        if text[start : match.start()].strip():
            spans.append((start, match.start()))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def chunk_context(text: str, context: int = 0, max_words: int = CHUNK_WORDS) -> list[Chunk]:
    """``text`` as chunks of whole sentences of at most ``max_words`` words each."""
    pieces: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        words = [m.span() for m in re.finditer(r"\S+", text[start:end])]
        for i in range(0, len(words), max_words):  # a sentence longer than a chunk: cut it
            part = words[i : i + max_words]
            pieces.append((start + part[0][0], start + part[-1][1]))
    chunks: list[Chunk] = []
    lo = hi = None
    count = 0
    for start, end in pieces:
        n = len(text[start:end].split())
        if lo is not None and hi is not None and count + n > max_words:
            chunks.append(Chunk(context, lo, hi, text[lo:hi]))
            lo = None
        if lo is None:
            lo, count = start, 0
        hi, count = end, count + n
    if lo is not None and hi is not None:
        chunks.append(Chunk(context, lo, hi, text[lo:hi]))
    return chunks


def chunk_contexts(contexts: Sequence[str], max_words: int = CHUNK_WORDS) -> list[Chunk]:
    return [c for i, text in enumerate(contexts) for c in chunk_context(text, i, max_words)]


def content_words(text: str) -> frozenset[str]:
    stop = stop_words()
    return frozenset(w for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in stop)


def top_chunks(claim: str, chunks: Sequence[Chunk], k: int = TOP_CHUNKS) -> list[int]:
    """Indexes of the ``k`` chunks sharing the most content words with ``claim``."""
    words = content_words(claim)
    overlap = [len(words & content_words(c.text)) for c in chunks]
    order = sorted(range(len(chunks)), key=lambda i: (-overlap[i], i))
    return order[:k]


def cut_claim(claim: str, max_words: int = CLAIM_WORDS) -> str:
    words = claim.split()
    return claim if len(words) <= max_words else " ".join(words[:max_words])


def claim_sentences(answer: str) -> list[str]:
    """An answer's claims, one per sentence (the cross-encoder backend's unit)."""
    return [answer[s:e].strip() for s, e in sentence_spans(answer) if answer[s:e].strip()]
