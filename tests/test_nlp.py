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
