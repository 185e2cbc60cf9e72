"""Parse a batch of answers with spaCy, once, and index their contexts, for the hallucination
check.

Answers go through one ``nlp.pipe`` call per batch (spaCy's per-call overhead and its batching
of the neural components are paid per batch, not per event). Contexts are only looked up, so
by default (``hallucination.context_index: lexical``) they never go through the neural
pipeline: :mod:`~verdictflow.evaluators.context_index` builds their index from the tokenizer,
a rule-based sentencizer and the rule lemmatizer, and ``parse`` (the former path) runs the
full pipeline over them. Indexes are cached by the context's content hash, bounded by bytes of
context text, since retrieval returns the same documents again and again; an index depends
only on the text and the mode, so caching cannot change a verdict. A driver may also hand the
analyzer an :class:`IndexStore` (``verdictflow.context_store``: SQLite under the data dir), so
an index built once is read back after a restart instead of built again (issue 41); stored
indexes are exact (:mod:`~verdictflow.evaluators.evidence_codec`), and one that does not decode
is built again.

Deterministic but not pure in the strict sense: it holds the loaded pipeline, which drivers
load once per process (``verdictflow.nlp.load_pipeline``) and pass in.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from verdictflow.evaluators.anchors import Anchor, HedgedClaim, extract_anchors
from verdictflow.evaluators.answer_claims import AnswerSentence, WordRelations, answer_sentences
from verdictflow.evaluators.chunk_tokens import ChunkMemo
from verdictflow.evaluators.claim_alignment import Coverages, claim_coverages, supporting_sentences
from verdictflow.evaluators.context_index import ContextIndexer, Form
from verdictflow.evaluators.evidence_codec import decode_index, encode_index
from verdictflow.evaluators.evidence_index import (
    EvidenceIndex,
    build_evidence_index,
    content_words,
)
from verdictflow.evaluators.faithfulness_signals import SentenceRelations
from verdictflow.evaluators.hallucination import HallucinationResult, hallucination
from verdictflow.evaluators.policy import HallucinationPolicy
from verdictflow.evaluators.relation_frames import MAX_SUPPORT_CHARS, Frame, frame
from verdictflow.evaluators.relations import checkable
from verdictflow.models.events import AnswerEvent

logger = logging.getLogger(__name__)

#: Components the hallucination check uses (the rest of the pipeline stays disabled).
COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")
#: Memory an evidence index takes per character of its context text: 82 bytes measured on
#: QAGS CNN/DM articles (tracemalloc, 178,278 characters; words, spans, per-sentence lemma
#: sets), rounded up. The cache counts its entries at this rate, not by their text: counted
#: by text, its former 64 MiB bound allowed ~5 GB of indexes.
INDEX_BYTES_PER_CHAR = 90
#: Estimated bytes of index memory the context cache holds by default (~3 million characters
#: of context, some 700 retrieved passages of 4 KB).
CACHE_BYTES = 256 * 1024 * 1024
#: Parsed supporting sentences kept (their relation frames), by text: retrieval returns the same
#: passages again and again, and their best sentences with them.
SUPPORT_CACHE_ENTRIES = 8192
#: Characters of supporting sentences an answer may have parsed even when it is shorter.
SUPPORT_CHARS_FLOOR = 1000


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """What the hallucination and faithfulness verdicts need from one answer and its contexts."""

    anchors: tuple[Anchor, ...]
    hedged: tuple[HedgedClaim, ...]
    content_words: tuple[str, ...]
    contexts: tuple[EvidenceIndex, ...]
    #: The answer's sentences and content words, for the faithfulness signals.
    sentences: tuple[AnswerSentence, ...] = ()
    #: Its sentences' relations against their best-supporting context sentences.
    relations: tuple[SentenceRelations, ...] = ()
    #: Each claim's coverage by the context sentences (computed once, for both).
    coverages: Coverages = ()
    _checks: dict[tuple[float, float], HallucinationResult] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def anchor_checks(self, policy: HallucinationPolicy) -> HallucinationResult:
        """The hallucination check of the answer's anchors against its contexts (spec 003),
        computed once per drift setting: the hallucination verdict and the faithfulness
        signals both read it (it was computed twice, ~0.4 ms an answer on RAG traffic)."""
        key = (policy.drift_min_overlap, policy.drift_penalty)
        found = self._checks.get(key)
        if found is None:
            found = self._checks[key] = hallucination(
                self.anchors, self.hedged, self.content_words, self.contexts,
                drift_min_overlap=policy.drift_min_overlap, drift_penalty=policy.drift_penalty,
            )  # fmt: skip
        return found


class ContextCache:
    """Evidence indexes by the SHA-256 of their context text, least recently used first out,
    bounded by the memory they take (estimated at :data:`INDEX_BYTES_PER_CHAR` per character
    of text). ``hits``, ``misses`` and ``bytes`` feed the worker's metrics."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[bytes, EvidenceIndex] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

    def get(self, key: bytes) -> EvidenceIndex | None:
        index = self._entries.get(key)
        if index is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return index

    def put(self, key: bytes, index: EvidenceIndex) -> None:
        if key in self._entries:
            return
        self._entries[key] = index
        self.bytes += len(index.text) * INDEX_BYTES_PER_CHAR
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, evicted = self._entries.popitem(last=False)
            self.bytes -= len(evicted.text) * INDEX_BYTES_PER_CHAR


class IndexStore(Protocol):
    """Encoded evidence indexes kept outside the process, by the SHA-256 of their text (the
    driver's side: the store decides where, for how long and under which version key)."""

    def read(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored bodies of those ``keys`` it has (a failing store returns none)."""
        ...

    def write(self, entries: Sequence[tuple[bytes, bytes]]) -> None:
        """Keep ``(key, body)`` entries (best effort: a failing store drops them)."""
        ...


class AnswerAnalyzer:
    """Batch parser of answers, with a bounded cache of context evidence indexes."""

    def __init__(
        self,
        nlp: Any,
        *,
        entity_anchors: bool = True,
        term_anchors: str = "always",
        context_index: str = "lexical",
        cache_bytes: int = CACHE_BYTES,
        batch_size: int = 64,
        lexicon: WordRelations | None = None,
        relations: bool = True,
        store: IndexStore | None = None,
    ) -> None:
        self.nlp = nlp
        #: Parse each claim's best-supporting context sentence for the relation signals
        #: (off: the relation signals are 0, as before issue 31; the cost bench compares).
        self.relations = relations
        self.lexicon = lexicon
        self.entity_anchors = entity_anchors
        self.term_anchors = term_anchors
        self.context_index = context_index
        self.batch_size = batch_size
        self.cache = ContextCache(cache_bytes)
        self.store = store
        #: Stored bodies that did not decode (built again and written over).
        self.store_rejects = 0
        #: Contexts whose evidence index was built here (neither cached nor stored).
        self.contexts_indexed = 0
        self._lemma_cache: dict[str, frozenset[str]] = {}
        self._form_cache: dict[tuple[int, int], Form] = {}
        self._chunk_memo: ChunkMemo[Form] = ChunkMemo()
        self._support_frames: OrderedDict[str, Frame] = OrderedDict()

    def _index_missing(self, texts: Sequence[str]) -> list[EvidenceIndex]:
        self.contexts_indexed += len(texts)
        if self.context_index == "parse":
            docs = self.nlp.pipe(texts, batch_size=self.batch_size)
            return [build_evidence_index(doc) for doc in docs]
        # An indexer per call (0.5 ms), over the pipeline of this batch, sharing the caches:
        # none outlives its batch, so a pipeline loaded afresh (``verdictflow.nlp.
        # parsing_batch``) leaves nothing here holding the grown one.
        loaded = self.nlp.load() if hasattr(self.nlp, "load") else self.nlp
        indexer = ContextIndexer(loaded, self._lemma_cache, self._form_cache, self._chunk_memo)
        return [indexer.index(text) for text in texts]

    def _indexes(self, texts: Sequence[str]) -> dict[str, EvidenceIndex]:
        found: dict[str, EvidenceIndex] = {}
        missing: dict[str, bytes] = {}  # insertion-ordered: index order stays input order
        for text in texts:
            if text in found or text in missing:
                continue
            key = self.cache.key(text)
            cached = self.cache.get(key)
            if cached is not None:
                found[text] = cached
            else:
                missing[text] = key
        if missing and self.store is not None:
            for text, index in self._stored(missing).items():
                found[text] = index
                self.cache.put(missing.pop(text), index)
        built = self._index_missing(list(missing)) if missing else []
        for (text, key), index in zip(missing.items(), built, strict=True):
            found[text] = index
            self.cache.put(key, index)
        if missing and self.store is not None:
            self.store.write([(key, encode_index(index)) for key, index in
                              zip(missing.values(), built, strict=True)])  # fmt: skip
        return found

    def _stored(self, missing: dict[str, bytes]) -> dict[str, EvidenceIndex]:
        """The indexes of ``missing`` texts the store has and that decode for their text."""
        assert self.store is not None
        bodies = self.store.read(list(missing.values()))
        out = {}
        for text, key in missing.items():
            body = bodies.get(key)
            if body is None:
                continue
            try:
                out[text] = decode_index(body, text)
            except ValueError as exc:
                self.store_rejects += 1
                logger.warning("stored evidence index %s not used (%s): built again",
                               key.hex()[:16], exc)  # fmt: skip
        return out

    def index_contexts(self, texts: Sequence[str]) -> int:
        """Index ``texts`` ahead of the answers that will cite them, as :meth:`analyze` indexes
        an answer's contexts (kept in memory and written to the store); how many were built
        here, the others being cached or stored already."""
        before = self.contexts_indexed
        self._indexes([text for text in texts if text.strip()])
        return self.contexts_indexed - before

    def analyze(self, events: Sequence[AnswerEvent]) -> list[ParsedAnswer]:
        """One :class:`ParsedAnswer` per event, in order."""
        context_texts = [c.text for e in events for c in e.context_passages if c.text.strip()]
        indexes = self._indexes(context_texts)
        answer_docs = self.nlp.pipe([e.answer for e in events], batch_size=self.batch_size)
        parsed = []
        pending: list[list[tuple[Frame, int, tuple[int, int], str]]] = []
        for event, doc in zip(events, answer_docs, strict=True):
            anchors, hedged = extract_anchors(
                doc,
                entity_anchors=self.entity_anchors,
                term_anchors_always=self.term_anchors == "always",
            )
            contexts = tuple(indexes[c.text] for c in event.context_passages if c.text.strip())
            sentences = answer_sentences(doc, self.lexicon)
            coverages = claim_coverages(sentences, contexts) if self.relations else ()
            pending.append(self._relation_candidates(doc, sentences, contexts, coverages))
            parsed.append(
                ParsedAnswer(
                    tuple(anchors), tuple(hedged), tuple(content_words(doc)), contexts,
                    sentences, coverages=coverages,
                )
            )  # fmt: skip
        frames = self._frames_of({text for items in pending for *_, text in items})
        out = []
        for answer, items in zip(parsed, pending, strict=True):
            relations = tuple(
                SentenceRelations(answer_frame, frames[text], context, span)
                for answer_frame, context, span, text in items
            )
            out.append(replace(answer, relations=relations))
        return out

    def _relation_candidates(
        self,
        doc: Any,
        sentences: Sequence[AnswerSentence],
        contexts: Sequence[EvidenceIndex],
        coverages: Coverages,
    ) -> list[tuple[Frame, int, tuple[int, int], str]]:
        """The claims that state a relation the checks can test (``relations.checkable``: a
        verb with its roles, a comparison, a value written with digits), each with its
        best-supporting context sentence's place and text, when that sentence is short enough
        to parse (:data:`MAX_SUPPORT_CHARS`) and does not quote the claim word for word
        (:func:`_quoted`)."""
        out: list[tuple[Frame, int, tuple[int, int], str]] = []
        if not self.relations:
            return out
        supports = supporting_sentences(sentences, contexts, coverages)
        # Bounded cost: supporting sentences of at most the answer's own length in all (and
        # at least SUPPORT_CHARS_FLOOR), so the extra parse stays within one answer's parse
        # however long the answer (issue 28's per-record budget holds).
        budget = max(len(doc.text), SUPPORT_CHARS_FLOOR)
        for sent, sentence, support in zip(doc.sents, sentences, supports, strict=True):
            if support is None or not sentence.claim:
                continue
            context, (start, end) = support
            text = contexts[context].text[start:end]
            if len(text) > MAX_SUPPORT_CHARS or _quoted(sent.text, text):
                continue
            answer_frame = frame(sent)
            if checkable(answer_frame):
                budget -= len(text)
                if budget < 0:
                    break
                out.append((answer_frame, context, (start, end), text))
        return out

    def _frames_of(self, texts: set[str]) -> dict[str, Frame]:
        """Relation frames of supporting sentences: cached, the rest parsed in one call."""
        found: dict[str, Frame] = {}
        missing = []
        for text in sorted(texts):
            cached = self._support_frames.get(text)
            if cached is None:
                missing.append(text)
            else:
                self._support_frames.move_to_end(text)
                found[text] = cached
        for text, doc in zip(missing, self.nlp.pipe(missing, batch_size=self.batch_size),
                             strict=True):  # fmt: skip
            found[text] = self._support_frames[text] = frame(doc[:])
            while len(self._support_frames) > SUPPORT_CACHE_ENTRIES:
                self._support_frames.popitem(last=False)
        return found


def _quoted(claim: str, support: str) -> bool:
    """The supporting sentence has the claim sentence word for word: no role, value or
    comparison of it can differ from the source's, so its relations are not checked (and the
    sentence is not parsed for them). Checking it could only find a difference between two
    parses of the same words (the claim parsed among the answer's sentences, the support on its
    own), never one between the texts; extractive answers skip most of the support parse this
    way (issue 41)."""
    words = claim.split()
    return bool(words) and f" {' '.join(words)} " in f" {' '.join(support.split())} "
