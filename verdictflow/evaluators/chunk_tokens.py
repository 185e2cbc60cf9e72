"""Context text tokenized chunk by chunk, with each chunk's tokens remembered.

spaCy's tokenizer cuts a text at whitespace and tokenizes each chunk in between on its own, a
word with its punctuation ("cells,", "(p<0.05)."). Then one pass over the whole doc
(``Tokenizer._apply_special_cases``) looks for the exceptions' token sequences (":)", "'s",
"10a.m.") with a ``PhraseMatcher``. The tokenizer caches chunks, but in spaCy 3.8 a text stops
adding to that cache at its first exception ("e.g.", "vs.", "don't": the guard of spaCy issue
#1250). So most chunks of a scientific abstract were split by the affix rules every time,
about 3 ms of each RAG-shaped answer's ~4.5 KB of new context (issue 41).

Here each chunk's tokens are kept once read (:class:`ChunkMemo`), and a context becomes the
concatenation of its chunks' tokens. Except for one case, that is exactly the doc spaCy
makes of the whole text:

- a chunk's tokens come from the affix rules and that one chunk only;
- whitespace makes tokens of its own by one rule: a single space after a chunk is that
  chunk's trailing space, and every other run of whitespace is a token (what follows such a
  space is the token);
- the exceptions' matcher runs on the whole doc, so a match inside a chunk is found both
  ways.

The exception is a match that spans two chunks. In "' '':-)" the pattern of "''" ("'", "'")
matches the first chunk's "'" and the first "'" of the next across the space; such a match
changes no token itself (its text, space included, is no exception), but it wins over the match
it overlaps, and "''" stays two tokens. So each chunk also keeps the texts its first and last
tokens had before the matcher merged any (an exception's tokens lead back to its pattern's), and
where the last of one chunk and the first of the next are two tokens in a row of some pattern
(:func:`exception_pairs`), the text is handed to spaCy whole: 26 of the 1,800 contexts of the
rare-context bench. (The pipeline's tokenizer cuts a long punctuation run,
``verdictflow.nlp.bounded_runs``, at the same places whether given the chunk or the text: a run
holds no whitespace.) ``tests/evaluators/test_chunk_tokens.py`` holds every token, offset and norm
equal to spaCy's, on the data's texts and on generated ones full of exceptions.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

V = TypeVar("V")

#: Chunks kept (cleared when full), of at most :data:`CHUNK_CHARS` characters each (a longer
#: one, a URL or a run of symbols, is read afresh every time): 366 bytes a chunk measured over
#: 4,120 SciFact abstracts (83,761 chunks, 29 MiB), so ~35 MiB when full.
CHUNK_CACHE = 100_000
CHUNK_CHARS = 48

_AT_START = (0,)
_NON_SPACE = re.compile(r"\S+")  # Python's \s is str.isspace(), as spaCy's tokenizer reads it
#: Chunks one space apart, nothing before the first or after the last.
_ONLY_SINGLE_SPACES = re.compile(r"\S+(?: \S+)*")


class Chunk(NamedTuple, Generic[V]):
    """One chunk's tokens: the values read from them and their offsets in the chunk; and the
    texts its first and last tokens may have had before the exceptions' matcher ran on them,
    where one of those could be part of a match across chunks (else None)."""

    values: tuple[V, ...]
    offsets: tuple[int, ...]
    first: frozenset[str] | None
    last: frozenset[str] | None


class Exceptions(NamedTuple):
    """What a match of the tokenizer's exceptions across a chunk boundary needs
    (:func:`exception_pairs`), read once per model."""

    #: Two tokens in a row in some exception's matcher pattern.
    pairs: frozenset[tuple[str, str]]
    #: A token an exception gives (its first or last), to the pattern tokens it came from.
    first_from: dict[str, frozenset[str]]
    last_from: dict[str, frozenset[str]]
    #: The first and the second tokens of the pairs.
    pair_firsts: frozenset[str]
    pair_seconds: frozenset[str]
    #: A chunk's first (last) token that can end up in a crossing match, itself or through the
    #: pattern tokens an exception made it of; any other needs no look.
    may_start: frozenset[str]
    may_end: frozenset[str]
    #: Whether chunks a line apart can share no match (``ChunkTokens._learn_words``).
    lines_apart: bool


@dataclass
class ChunkMemo(Generic[V]):
    """Chunks read so far, shared by the indexers of one analyzer (one model) and holding no
    pipeline, so that an indexer made per batch starts warm."""

    chunks: dict[str, Chunk[V]] = field(default_factory=dict)
    #: :func:`exception_pairs` of the model's tokenizer, worked out on first use.
    exceptions: Exceptions | None = None
    #: Texts handed to spaCy whole (an exception's match could cross chunks).
    whole: int = 0


def exception_pairs(tokenizer: Any) -> Exceptions:
    """The matcher's patterns are the exceptions as the affix rules alone cut them
    (``Tokenizer.add_special_case``: ":-)" is ":", "-", ")"). A match across two chunks needs
    the last token of the one and the first of the other, as they were before the matcher
    merged any, to be two tokens in a row of a pattern. Read from every exception (a
    superset of those the matcher holds)."""
    from spacy.tokenizer import Tokenizer

    bare = Tokenizer(
        tokenizer.vocab,
        rules=None,
        prefix_search=tokenizer.prefix_search,
        suffix_search=tokenizer.suffix_search,
        infix_finditer=tokenizer.infix_finditer,
        token_match=tokenizer.token_match,
        url_match=tokenizer.url_match,
    )
    pairs: set[tuple[str, str]] = set()
    first_from: dict[str, set[str]] = {}
    last_from: dict[str, set[str]] = {}
    for exception in tokenizer.rules or {}:
        pattern = [token.text for token in bare(exception)]
        if len(pattern) < 2:
            continue
        pairs.update(itertools.pairwise(pattern))
        given = [token.text for token in tokenizer(exception)]
        first_from.setdefault(given[0], set()).add(pattern[0])
        last_from.setdefault(given[-1], set()).add(pattern[-1])
    pair_firsts = frozenset(a for a, _ in pairs)
    pair_seconds = frozenset(b for _, b in pairs)
    return Exceptions(
        frozenset(pairs),
        {token: frozenset(found) for token, found in first_from.items()},
        {token: frozenset(found) for token, found in last_from.items()},
        pair_firsts,
        pair_seconds,
        pair_seconds | first_from.keys(),
        pair_firsts | last_from.keys(),
        not any("\n" in pair for pair in pairs),
    )


class _CrossingError(Exception):
    """An exception's match could cross a chunk boundary of this text."""


class ChunkTokens(Generic[V]):
    """Tokens of texts by spaCy's ``tokenizer``, read chunk by chunk through ``memo``;
    ``read`` turns a chunk's doc into one value per token (the same for the same chunk)."""

    def __init__(
        self,
        tokenizer: Any,
        read: Callable[[Any], Sequence[V]],
        memo: ChunkMemo[V],
    ) -> None:
        self._tokenizer = tokenizer
        self._read = read
        self._memo = memo
        if memo.exceptions is None:
            memo.exceptions = exception_pairs(tokenizer)
        self._exceptions = memo.exceptions
        self._pairs = memo.exceptions.pairs

    def tokens(self, text: str) -> tuple[list[V], list[int]] | None:
        """Each token's value and character offset, or None where the text must be tokenized
        whole (see the module's docstring)."""
        chunks = self._memo.chunks
        if len(chunks) >= CHUNK_CACHE:
            chunks.clear()
        plain = _ONLY_SINGLE_SPACES.fullmatch(text) is not None
        words = text.split(" ") if plain else _NON_SPACE.findall(text)
        new = set(words).difference(chunks)
        if new:
            self._learn_words(sorted(new))
        try:
            return self._single_spaced(words) if plain else self._spaced(text)
        except _CrossingError:
            self._memo.whole += 1
            return None

    def _single_spaced(self, words: list[str]) -> tuple[list[V], list[int]]:
        """The tokens of a text of ``words`` one space apart (most context text): its chunks
        read in one pass, their offsets added up."""
        get = self._memo.chunks.get
        found = [get(word) or self._learn(word) for word in words]
        values = [value for chunk in found for value in chunk.values]
        offsets: list[int] = []
        start = 0
        left: frozenset[str] | None = None
        for word, chunk in zip(words, found, strict=True):
            if left is not None and chunk.first is not None:
                self._check(left, chunk.first)
            left = chunk.last
            if len(chunk.offsets) == 1:
                offsets.append(start)
            else:
                offsets += [start + offset for offset in chunk.offsets]
            start += len(word) + 1
        return values, offsets

    def _spaced(self, text: str) -> tuple[list[V], list[int]]:
        """The tokens of any text: chunks and the whitespace between them."""
        chunks = self._memo.chunks
        values: list[V] = []
        offsets: list[int] = []
        left: frozenset[str] | None = None
        pos = 0
        for match in _NON_SPACE.finditer(text):
            start = match.start()
            if start != pos:
                left = self._space(text, pos, start, values, offsets, left)
            word = match.group()
            left = self._put(chunks.get(word) or self._learn(word), start, values, offsets, left)
            pos = match.end()
        if pos != len(text):
            self._space(text, pos, len(text), values, offsets, left)
        return values, offsets

    def _check(self, last: frozenset[str], first: frozenset[str]) -> None:
        if any((a, b) in self._pairs for a in last for b in first):
            raise _CrossingError

    def _space(
        self,
        text: str,
        start: int,
        end: int,
        values: list[V],
        offsets: list[int],
        left: frozenset[str] | None,
    ) -> frozenset[str] | None:
        """The tokens of the whitespace ``text[start:end]``: none for a single space after a
        chunk (its trailing space), else the run less such a space (spaCy's rule). Returns
        what the next chunk's first token is checked against."""
        if start and text[start] == " ":
            start += 1
            if start == end:
                return left
        piece = text[start:end]
        return self._put(
            self._memo.chunks.get(piece) or self._learn(piece), start, values, offsets, left
        )

    def _put(
        self,
        chunk: Chunk[V],
        start: int,
        values: list[V],
        offsets: list[int],
        left: frozenset[str] | None,
    ) -> frozenset[str] | None:
        """Add ``chunk``'s tokens at ``start``, after checking that no match crosses into it
        from ``left`` (the last chunk's); returns what the next chunk is checked against."""
        if left is not None and chunk.first is not None:
            self._check(left, chunk.first)
        values += chunk.values
        if len(chunk.offsets) == 1:
            offsets.append(start)
        else:
            offsets += [start + offset for offset in chunk.offsets]
        return chunk.last

    def _learn(self, piece: str) -> Chunk[V]:
        """One piece's chunk, read from its own doc (whitespace, a long chunk)."""
        from spacy.attrs import IDX, ORTH

        doc = self._tokenizer(piece)
        orths, offsets = (column.tolist() for column in doc.to_array([ORTH, IDX]).T)
        strings = doc.vocab.strings
        chunk = self._chunk(self._read(doc), tuple(offsets), strings[orths[0]], strings[orths[-1]])
        if len(piece) <= CHUNK_CHARS:
            self._memo.chunks[piece] = chunk
        return chunk

    def _learn_words(self, words: Sequence[str]) -> None:
        """The chunks of ``words`` (no whitespace in them) from one doc of them all, a line
        each: spaCy's per-call cost, paid once for all, was most of reading a chunk alone. A
        line break between two chunks is a token of its own that no exception's pattern
        holds (checked when the pairs are read), so no match crosses it and each line's
        tokens are those of its chunk alone."""
        from spacy.attrs import IDX, ORTH

        if len(words) == 1 or not self._exceptions.lines_apart:
            for word in words:
                self._learn(word)
            return
        lines = "\n".join(words)
        doc = self._tokenizer(lines)
        orths, offsets = (column.tolist() for column in doc.to_array([ORTH, IDX]).T)
        # A sentinel past the last chunk's tokens (the text's length read from the string:
        # ``doc.text`` makes a ``Token`` of every token: 4 % of indexing new context, profiled).
        offsets.append(len(lines) + 1)
        values = self._read(doc)
        strings = doc.vocab.strings
        chunks = self._memo.chunks
        i, start = 0, 0
        for word in words:
            end = start + len(word)
            first = i
            i += 1
            if offsets[i] < end:
                while offsets[i] < end:
                    i += 1
                chunk = self._chunk(
                    values[first:i],
                    tuple(offset - start for offset in offsets[first:i]),
                    strings[orths[first]],
                    strings[orths[i - 1]],
                )
            else:  # one token, the word itself: most chunks
                chunk = self._chunk((values[first],), _AT_START, word, word)
            if len(word) <= CHUNK_CHARS:
                chunks[word] = chunk
            i += 1  # the line break
            start = end + 1

    def _chunk(
        self, values: Sequence[V], offsets: tuple[int, ...], first: str, last: str
    ) -> Chunk[V]:
        exceptions = self._exceptions
        firsts = lasts = None
        if first in exceptions.may_start:
            found = exceptions.first_from.get(first, frozenset()) | {first}
            firsts = found if found & exceptions.pair_seconds else None
        if last in exceptions.may_end:
            found = exceptions.last_from.get(last, frozenset()) | {last}
            lasts = found if found & exceptions.pair_firsts else None
        return Chunk(tuple(values), offsets, firsts, lasts)
