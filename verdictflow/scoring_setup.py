"""Build what scoring needs once per process: the policy's context, the relevance statistics
and the spaCy analyzer. Workers, ``eval answers``, ``dev`` and the validation scripts all call
:func:`load_scoring`, so they share one config digest for one configuration."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from verdictflow.context_store import open_store
from verdictflow.evaluators import completeness, relevance
from verdictflow.evaluators.answer_analysis import (
    CACHE_BYTES,
    COMPONENTS,
    AnswerAnalyzer,
    IndexStore,
)
from verdictflow.evaluators.answer_verdicts import ScoringContext
from verdictflow.evaluators.policy import Policy
from verdictflow.idf_stats import resolve_stats
from verdictflow.lexicon import LazyLexicon, lexicon_version
from verdictflow.nlp import LazyPipeline, installed_pipeline_version


@dataclass(frozen=True)
class Scoring:
    ctx: ScoringContext
    analyzer: AnswerAnalyzer


@dataclass(frozen=True)
class ScoringRecipe:
    """What :func:`load_scoring` is called with, picklable: how ``eval answers --jobs`` gives
    each scoring process the same scoring (and config digest) as the parent."""

    policy: Policy
    idf_stats: str | Path | None = "default"
    data_dir: Path | None = None
    store_bytes: int = 0

    def load(self, *, warm_up: bool = True) -> Scoring:
        return load_scoring(
            self.policy,
            self.idf_stats,
            data_dir=self.data_dir,
            store_bytes=self.store_bytes,
            warm_up=warm_up,
        )


def load_scoring(
    policy: Policy,
    idf_stats: str | Path | None = "default",
    *,
    data_dir: Path | None = None,
    store_bytes: int = 0,
    warm_up: bool = True,
) -> Scoring:
    """The scoring context and analyzer for ``policy``. spaCy is loaded once per process, on
    the analyzer's first batch: a process that never parses (a lexical-tier worker, calibrating
    groundedness) never loads it; the config digest takes the model's version from its
    meta.json, the same string the loaded pipeline gives (``tests/test_nlp.py``).

    With a ``data_dir`` and ``store_bytes`` > 0, context indexes are also kept in the data
    dir's store (:mod:`verdictflow.context_store`), read back after a restart; workers and
    ``eval answers`` pass their settings, validation and training keep to memory.

    ``warm_up=False`` skips importing what the lexical kinds need (scikit-learn, NLTK: ~2 s of
    CPU): for a process that only closes consistency groups, ``eval answers --jobs``' parent,
    whose scoring processes start on the same cores meanwhile."""
    nlp_version = installed_pipeline_version(COMPONENTS)
    ctx = ScoringContext(
        policy,
        background=resolve_stats(idf_stats),
        nlp_version=nlp_version,
        lexicon_version=lexicon_version(),
    )
    store = (
        open_store(data_dir, policy.hallucination.context_index, nlp_version, store_bytes)
        if data_dir is not None
        else None
    )
    analyzer = new_analyzer(policy, store=store)
    if warm_up:
        relevance.analyze("warm up")  # import scikit-learn now, not inside the first batch
        completeness.keywords("warm up")  # and NLTK (~1 s), which stalled the first batch
    return Scoring(ctx, analyzer)


def new_analyzer(
    policy: Policy, cache_bytes: int = CACHE_BYTES, store: IndexStore | None = None
) -> AnswerAnalyzer:
    """An analyzer with the policy's anchor and context-index options, over the process's one
    spaCy pipeline (``verdictflow.nlp.load_pipeline``, loaded on its first batch and shared
    with every other analyzer and the judges' parser), with its own context cache: an analyzer
    is used by one thread at a time."""
    return AnswerAnalyzer(
        LazyPipeline(COMPONENTS),
        entity_anchors=policy.hallucination.entity_anchors,
        term_anchors=policy.hallucination.term_anchors,
        context_index=policy.hallucination.context_index,
        cache_bytes=cache_bytes,
        lexicon=LazyLexicon(),
        store=store,
    )
