"""Context indexes without the neural pipeline, next to the parsed ones they replace."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verdictflow.evaluators.answer_analysis import (
    COMPONENTS,
    INDEX_BYTES_PER_CHAR,
    AnswerAnalyzer,
    ContextCache,
)
from verdictflow.evaluators.context_index import ContextIndexer
from verdictflow.evaluators.evidence_index import build_evidence_index
from verdictflow.evaluators.quantities import DatePoint
from verdictflow.models.events import AnswerEvent
from verdictflow.nlp import load_pipeline

TEXTS = [
    "The company did not increase prices in 2019. Revenue rose 3-5% to $3.2 billion.",
    "On March 3, 2021 the board met at 3 pm; twenty-five members voted. Nearly half agreed.",
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911. She was "
    "born in Warsaw on 7 November 1867 and moved to Paris, where she studied at the Sorbonne.",
    "Patients receiving the drug showed reduced mortality (HR 0.72, 95% CI 0.61-0.85) over "
    "the 1990s; the effect wasn't seen in mice, which were never treated before week six.",
]


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline(COMPONENTS)


def test_words_spans_and_content_are_those_of_the_full_parse(nlp) -> None:
    indexer = ContextIndexer(nlp)
    for text, doc in zip(TEXTS, nlp.pipe(TEXTS), strict=True):
        parsed, lexical = build_evidence_index(doc), indexer.index(text)
        assert lexical.words == parsed.words
        assert lexical.word_spans == parsed.word_spans
        assert lexical.content_unigrams == parsed.content_unigrams
        parsed_terms = set().union(*(s.terms for s in parsed.sentences))
        lexical_terms = set().union(*(s.terms for s in lexical.sentences))
        assert parsed_terms <= lexical_terms, text


def test_values_are_read_by_the_answer_sides_parsers(nlp) -> None:
    first, second = (ContextIndexer(nlp).index(t) for t in TEXTS[:2])
    assert {(float(q.value), q.percent) for q, _, _ in first.quantities} >= {
        (3.0, True),
        (5.0, True),
        (3.2e9, False),
    }
    assert {(float(q.value), q.percent) for q, _, _ in second.quantities} >= {
        (25.0, False),
        (0.5, False),
    }
    assert DatePoint(2021, 3, 3) in {d for d, _, _ in second.dates}
    assert [(clock, TEXTS[1][s:e]) for clock, s, e in second.times] == [((15, 0), "3 pm")]


def test_negation_marks_the_verb_it_negates(nlp) -> None:
    index = ContextIndexer(nlp).index(TEXTS[0] + " It rose again.")
    negated, revenue, again = index.sentences
    assert "increase" in negated.negated
    assert not revenue.negated
    assert not again.negated
    assert {"rise", "rose", "revenue"} <= revenue.terms


def test_the_cache_is_bounded_by_bytes_and_counts_hits(nlp) -> None:
    analyzer = AnswerAnalyzer(
        nlp, cache_bytes=(len(TEXTS[2]) + len(TEXTS[3])) * INDEX_BYTES_PER_CHAR
    )
    events = [
        AnswerEvent(id=str(i), answer="Curie won in 1903.", contexts=[t])
        for i, t in enumerate(TEXTS)
    ]
    analyzer.analyze(events)
    assert (analyzer.cache.misses, analyzer.cache.hits) == (4, 0)
    assert len(analyzer.cache) == 2
    assert analyzer.cache.bytes <= analyzer.cache.max_bytes
    analyzer.analyze(events[2:])
    assert (analyzer.cache.misses, analyzer.cache.hits) == (4, 2)
    assert ContextCache.key(TEXTS[0]) != ContextCache.key(TEXTS[1])


def test_both_modes_support_the_same_anchors_on_a_plain_case(nlp) -> None:
    event = AnswerEvent(
        id="a", answer="Marie Curie won the Nobel Prize in 1903 in Warsaw.", contexts=[TEXTS[2]]
    )
    parsed, lexical = (
        AnswerAnalyzer(nlp, context_index=mode).analyze([event])[0] for mode in ("parse", "lexical")
    )
    assert parsed.anchors == lexical.anchors
    assert parsed.contexts[0].words == lexical.contexts[0].words


def test_the_worker_exports_the_cache_figures(nlp) -> None:
    from prometheus_client import generate_latest

    from verdictflow.streams.worker_metrics import WorkerMetrics

    analyzer = AnswerAnalyzer(nlp)
    metrics = WorkerMetrics()
    metrics.watch_context_cache(analyzer.cache)
    event = AnswerEvent(id="a", answer="Curie won in 1903.", contexts=[TEXTS[2]])
    analyzer.analyze([event, event])
    text = generate_latest(metrics.registry).decode()
    assert "vf_context_cache_hits_total 0.0" in text  # one batch: indexed once, not looked up
    assert "vf_context_cache_misses_total 1.0" in text
    assert f"vf_context_cache_bytes {float(len(TEXTS[2]) * INDEX_BYTES_PER_CHAR)}" in text
    assert "vf_context_cache_entries 1.0" in text


@settings(max_examples=80)
@given(
    st.lists(
        st.sampled_from(
            ["Hello", "world", ".", "!!!", "?", '."', ")", "(", "e.g.", "Dr.", "3.5", "...",
             "It", "ends", ";", ":", "—", "'", "”", "\n\n", "。", "U.S.", "!?"]
        ),
        max_size=30,
    )
)  # fmt: skip
def test_sentences_start_where_spacys_sentencizer_starts_them(nlp, words: list[str]) -> None:
    from spacy.pipeline import Sentencizer

    indexer = ContextIndexer(nlp)
    text = " ".join(words)
    doc = nlp.make_doc(text)
    forms, _, starts = indexer._tokens(doc)
    assert starts == ([s.start for s in Sentencizer()(nlp.make_doc(text)).sents] if forms else [])
