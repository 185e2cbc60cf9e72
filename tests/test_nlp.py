"""The model version in every config digest, read without loading the model, is the loaded
pipeline's own; and the analyzer loads spaCy only when it parses."""

from __future__ import annotations

from verdictflow.evaluators.answer_analysis import COMPONENTS
from verdictflow.nlp import (
    FULL_COMPONENTS,
    installed_pipeline_version,
    load_pipeline,
    pipeline_version,
)


def test_version_from_meta_equals_the_loaded_pipelines() -> None:
    for components in (COMPONENTS, FULL_COMPONENTS, ("tok2vec", "ner")):
        expected = pipeline_version(load_pipeline(components))
        assert installed_pipeline_version(components) == expected


def test_scoring_setup_does_not_load_spacy_until_a_parse() -> None:
    import subprocess
    import sys

    # In a fresh interpreter: this test process may have loaded the pipeline already.
    probe = (
        "import sys; from verdictflow.evaluators.policy import Policy; "
        "from verdictflow.scoring_setup import load_scoring; s = load_scoring(Policy()); "
        "from verdictflow.nlp import _load; loaded = _load.cache_info().currsize > 0; "
        "from verdictflow.evaluators.answer_batch import score_answers; "
        "from verdictflow.evaluators.kinds import Tier; "
        "from verdictflow.models.events import AnswerEvent; "
        "e = [AnswerEvent(id='a', answer='Paris is in France.', contexts=['Paris, France.'])]; "
        "lexical = score_answers(e, s.ctx, s.analyzer, Tier.LEXICAL); "
        "still = _load.cache_info().currsize > 0; "
        "nlp = score_answers(e, s.ctx, s.analyzer, Tier.NLP); "
        "print(loaded, still, nlp[0][0].config_digest == lexical[0][0].config_digest)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "False", "True"]


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
