"""Parse a batch of answers and their contexts with spaCy, once, for the hallucination check.

One ``nlp.pipe`` call over the batch's answers and one over its distinct, not yet indexed
contexts: spaCy's per-call overhead and its batching of the neural components are paid per
batch, not per event. Context indexes are kept in a bounded LRU keyed by the context text,
since retrieval returns the same documents again and again; an index depends only on the text,
so caching cannot change a verdict.

Deterministic but not pure in the strict sense: it holds the loaded pipeline, which drivers
load once per process (``verdictflow.nlp.load_pipeline``) and pass in.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verdictflow.evaluators.anchors import Anchor, HedgedClaim, extract_anchors
from verdictflow.evaluators.evidence_index import (
    EvidenceIndex,
    build_evidence_index,
    content_words,
)
from verdictflow.models.events import AnswerEvent

#: Components the hallucination check uses (the rest of the pipeline stays disabled).
COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """What the hallucination verdict needs from one answer and its contexts."""

    anchors: tuple[Anchor, ...]
    hedged: tuple[HedgedClaim, ...]
    content_words: tuple[str, ...]
    contexts: tuple[EvidenceIndex, ...]


class AnswerAnalyzer:
    """Batch parser with a bounded cache of context evidence indexes."""

    def __init__(
        self,
        nlp: Any,
        *,
        entity_anchors: bool = True,
        term_anchors: str = "always",
        cache_size: int = 4096,
        batch_size: int = 64,
    ) -> None:
        self.nlp = nlp
        self.entity_anchors = entity_anchors
        self.term_anchors = term_anchors
        self.batch_size = batch_size
        self._cache: OrderedDict[str, EvidenceIndex] = OrderedDict()
        self._cache_size = cache_size

    def _indexes(self, texts: Sequence[str]) -> dict[str, EvidenceIndex]:
        found: dict[str, EvidenceIndex] = {}
        missing: dict[str, None] = {}  # insertion-ordered set: parse order stays input order
        for text in texts:
            if text in found:
                continue
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                found[text] = cached
            else:
                missing[text] = None
        for text, doc in zip(
            missing, self.nlp.pipe(missing, batch_size=self.batch_size), strict=True
        ):
            index = build_evidence_index(doc)
            found[text] = index
            self._cache[text] = index
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return found

    def analyze(self, events: Sequence[AnswerEvent]) -> list[ParsedAnswer]:
        """One :class:`ParsedAnswer` per event, in order."""
        context_texts = [c.text for e in events for c in e.context_passages if c.text.strip()]
        indexes = self._indexes(context_texts)
        answer_docs = self.nlp.pipe([e.answer for e in events], batch_size=self.batch_size)
        parsed = []
        for event, doc in zip(events, answer_docs, strict=True):
            anchors, hedged = extract_anchors(
                doc,
                entity_anchors=self.entity_anchors,
                term_anchors_always=self.term_anchors == "always",
            )
            contexts = tuple(indexes[c.text] for c in event.context_passages if c.text.strip())
            parsed.append(
                ParsedAnswer(tuple(anchors), tuple(hedged), tuple(content_words(doc)), contexts)
            )
        return parsed
