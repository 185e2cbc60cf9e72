"""The model version in every config digest, read without loading the model, is the loaded
pipeline's own; and the analyzer loads spaCy only when it parses."""

from __future__ import annotations

from typing import Any

import pytest

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.nlp import (
    FULL_COMPONENTS,
    installed_pipeline_version,
    load_pipeline,
    parsing_batch,
    pipeline_renewals,
    pipeline_version,
)


def test_version_from_meta_equals_the_loaded_pipelines() -> None:
    for components in (COMPONENTS, FULL_COMPONENTS, ("tok2vec", "ner")):
        expected = pipeline_version(load_pipeline(components))
        assert installed_pipeline_version(components) == expected


def test_scoring_setup_does_not_import_spacy_nor_load_it_until_a_parse() -> None:
    """Nor does scoring import SciPy or scikit-learn (~2.4 s of a process's start): the stop
    words are read from scikit-learn's file, NLTK is imported without them
    (``verdictflow/english_stop_words.py``, ``verdictflow/nltk_import.py``)."""
    import subprocess
    import sys

    # In a fresh interpreter: this test process may have loaded the pipeline already.
    probe = (
        "import sys; from verdictflow.evaluators.policy import Policy; "
        "from verdictflow.scoring_setup import load_scoring; s = load_scoring(Policy()); "
        "imported = 'spacy' in sys.modules; "
        "from verdictflow.nlp import loaded_pipelines; loaded = loaded_pipelines() > 0; "
        "from verdictflow.evaluators.answer_batch import score_answers; "
        "from verdictflow.evaluators.kinds import Tier; "
        "from verdictflow.models.events import AnswerEvent; "
        "e = [AnswerEvent(id='a', answer='Paris is in France.', contexts=['Paris, France.'])]; "
        "lexical = score_answers(e, s.ctx, s.analyzer, Tier.LEXICAL); "
        "still = loaded_pipelines() > 0; "
        "nlp = score_answers(e, s.ctx, s.analyzer, Tier.NLP); "
        "heavy = sorted({'scipy', 'sklearn', 'pandas'} & set(sys.modules)) or ['none']; "
        "import sklearn.metrics, scipy.stats; "  # left out of NLTK, importable afterwards
        "print(imported, loaded, still, nlp[0][0].config_digest == lexical[0][0].config_digest, "
        "*heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # the version for the digest is read from the model's meta.json, spaCy not even imported
    assert out.stdout.split() == ["False", "False", "False", "True", "none"]


def test_lemma_index_as_sets_gives_the_models_own_lemmas() -> None:
    """The index tables become frozensets for speed (``nlp._index_tables_as_sets``); the
    lemmas must be those of the model as shipped, for every part of speech."""
    from verdictflow.nlp import _import_model

    text = (
        "The mice were running faster than the studies predicted; she'd written better "
        "analyses of the leaves, geese and criteria, and they're hoping the indices rose."
    )
    patched = load_pipeline(COMPONENTS)
    shipped = _import_model().load()
    lookups = patched.get_pipe("lemmatizer").lookups.get_table("lemma_index")
    assert all(isinstance(lookups.get(pos), frozenset) for pos in ("noun", "verb", "adj"))
    assert [t.lemma_ for t in patched(text)] == [t.lemma_ for t in shipped(text)]
    shipped_lemmatizer = shipped.get_pipe("lemmatizer")
    patched_lemmatizer = patched.get_pipe("lemmatizer")
    for token in patched.make_doc(text):
        for pos in ("NOUN", "VERB", "ADJ"):
            token.pos_ = pos
            assert patched_lemmatizer.rule_lemmatize(token) == shipped_lemmatizer.rule_lemmatize(
                token
            ), (token.text, pos)


def _parse_table(nlp: Any, text: str) -> list[tuple[str, ...]]:
    return [
        (t.text, t.tag_, t.dep_, str(t.head.i), t.lemma_, t.ent_type_, str(t.is_sent_start))
        for t in nlp(text)
    ]


def test_a_grown_vocabulary_is_loaded_afresh_between_batches_and_parses_the_same() -> None:
    """``parsing_batch`` drops a pipeline whose vocabulary passed the limit once no batch holds
    it, never inside a batch; the fresh pipeline parses as the grown one did."""
    text = "Marie Curie won the Nobel Prize in 1903 and again in 1911, in Paris."
    nlp = load_pipeline(COMPONENTS)
    before = _parse_table(nlp, text)
    renewals = pipeline_renewals()
    limit = len(nlp.vocab) + 500
    with parsing_batch(limit):
        with parsing_batch(limit):  # another thread's batch, say
            nlp.make_doc(" ".join(f"zq{i}vx" for i in range(1000)))
            assert len(nlp.vocab) > limit
        assert load_pipeline(COMPONENTS) is nlp  # the outer batch still holds it
    fresh = load_pipeline(COMPONENTS)
    assert fresh is not nlp
    assert len(fresh.vocab) < limit
    assert pipeline_renewals() == renewals + 1
    assert _parse_table(fresh, text) == before
    with parsing_batch(0):  # no limit: nothing is dropped
        fresh.make_doc(" ".join(f"zq{i}vy" for i in range(1000)))
    assert load_pipeline(COMPONENTS) is fresh


def test_verdicts_are_the_same_when_the_pipeline_is_loaded_afresh_at_every_batch() -> None:
    """The analyzer follows a reload and scores exactly as without one (hallucination and
    faithfulness, byte for byte), and nothing keeps a dropped pipeline alive: each is freed at
    the end of the batch that dropped it."""
    import gc

    from verdictflow.evaluators.answer_batch import score_answers
    from verdictflow.evaluators.kinds import Tier
    from verdictflow.evaluators.policy import Policy
    from verdictflow.models.codec import encode
    from verdictflow.models.events import AnswerEvent
    from verdictflow.scoring_setup import load_scoring

    passages = [
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. It is 330 "
        "metres tall and was designed by Gustave Eiffel's company.",
        "Aspirin reduced the risk of stroke by 22 percent in the 2009 trial of 4,500 patients, "
        "according to Dr. Alan Smith of Boston University.",
        "Mount Kilimanjaro, in Tanzania, rises 5,895 metres; Hans Meyer first reached its "
        "summit in October 1889.",
    ]
    answers = [
        "The Eiffel Tower was finished in 1899 and is 330 metres tall.",
        "Aspirin cut stroke risk by 22 percent in a 2009 trial, said Alan Smith.",
        "Hans Meyer first climbed Kilimanjaro, which is in Kenya, in 1889.",
    ]
    events = [
        AnswerEvent(id=f"a{i}", query="q", answer=answer, contexts=[passage])
        for i, (answer, passage) in enumerate(zip(answers, passages, strict=True))
    ]

    def live_vocabularies() -> int:
        from spacy.vocab import Vocab

        return sum(type(o) is Vocab for o in gc.get_objects())

    def scored(limit: int) -> list[bytes]:
        scoring = load_scoring(Policy())
        out = []
        before = live_vocabularies()
        for event in events:  # one batch an answer
            with parsing_batch(limit):
                verdicts = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
                out += [encode(v) for v in verdicts[0]]
            if limit:  # each batch's pipeline was dropped at its end, and freed there
                assert live_vocabularies() <= before, "a dropped pipeline outlived its batch"
        return out

    renewals = pipeline_renewals()
    gc.disable()  # only parsing_batch's own collection may free a dropped pipeline here
    try:
        again = scored(1)  # every batch ends over the limit: a fresh pipeline for the next
    finally:
        gc.enable()
    assert pipeline_renewals() >= renewals + len(events)
    assert again == scored(0)
    assert len(again) == 2 * len(events)


def test_the_worker_exports_the_vocabulary_and_its_reloads() -> None:
    from prometheus_client import generate_latest

    from verdictflow.nlp import loaded_lexemes
    from verdictflow.streams.worker_metrics import WorkerMetrics

    metrics = WorkerMetrics()
    metrics.watch_spacy()
    nlp = load_pipeline(COMPONENTS)
    with parsing_batch(0):
        nlp.make_doc("qx1zz qx2zz qx3zz")
    text = generate_latest(metrics.registry).decode()
    assert loaded_lexemes() >= len(nlp.vocab) > 3
    assert f"vf_spacy_vocab_lexemes {float(loaded_lexemes())}" in text
    assert f"vf_spacy_pipeline_reloads_total {float(pipeline_renewals())}" in text
    before = pipeline_renewals()
    with parsing_batch(1):  # every loaded pipeline is over it: dropped at the end
        pass
    text = generate_latest(metrics.registry).decode()
    assert "vf_spacy_vocab_lexemes 0.0" in text
    assert pipeline_renewals() > before
    assert f"vf_spacy_pipeline_reloads_total {float(pipeline_renewals())}" in text


@pytest.mark.timeout(120)
def test_a_flood_of_punctuation_is_scored_in_seconds_with_its_tokens_in_place() -> None:
    """spaCy splits a run of punctuation off a word one character at a time, at a cost that
    grows with the square of the run: 20,000 "!" took 98 s to tokenize, 4,000 "=" 7.7 s. A
    text with a run over 32 is tokenized in pieces cut inside its runs (``bounded_runs``),
    their docs joined: the doc's text is the text, character for character (a space in place
    of every 33rd character, as before, showed in every span read from the doc), and a record
    of such an answer and context is scored well within this test's timeout."""
    from verdictflow.evaluators.answer_batch import score_answers
    from verdictflow.evaluators.kinds import Tier
    from verdictflow.evaluators.policy import Policy
    from verdictflow.models.events import AnswerEvent
    from verdictflow.nlp import PUNCT_RUN, bounded_runs
    from verdictflow.scoring_setup import load_scoring

    text = "Wow" + "!" * 70 + " The Nile is long. " + "😀" * 40 + " ok"
    pieces = bounded_runs(text)
    assert pieces is not None
    assert "".join(pieces) == text
    assert [len(piece) for piece in pieces[:3]] == [3 + PUNCT_RUN, PUNCT_RUN, 6 + 19 + PUNCT_RUN]
    prose = "The Nile is long. Paris is in France (see page 3)! Really? James's dog's bone."
    assert bounded_runs(prose) is None
    chain = "dog" + "'s" * 50  # taken off the word one "'s" at a time too
    assert bounded_runs(chain) is not None
    nlp = load_pipeline(FULL_COMPONENTS)
    table = "| a | b |\n|" + "-" * 40 + "|" + "-" * 40 + "|\n| 1 | 2 |"
    for flood in ("=" * 20_000, table, chain, text):
        doc = nlp.make_doc(flood)
        assert doc.text == flood
        assert "".join(t.text_with_ws for t in doc) == flood
    assert [s.text for s in nlp(table + " The Nile is long.").sents][-1].endswith("long.")

    scoring = load_scoring(Policy())
    event = AnswerEvent(id="flood", answer="!" * 2_000, contexts=["=" * 100_000 + " The Nile."])
    (verdicts,) = score_answers([event], scoring.ctx, scoring.analyzer, Tier.NLP)
    assert {v.kind.value for v in verdicts} == {"hallucination", "faithfulness"}
