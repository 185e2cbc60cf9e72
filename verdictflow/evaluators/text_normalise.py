"""Text normalisation before anything is tokenised or parsed, for every verdict kind.

LLM output and scraped contexts carry characters nobody sees: zero-width spaces and joiners,
byte-order marks, soft hyphens, bidirectional marks, NUL and other control characters, and
terminal colour codes (ANSI escape sequences). Inside a word they split it ("c\\u200bat" is
"c" and "at" to a tokenizer), so the same visible text scored FAIL that scored PASS clean.
:func:`normalise` returns what every scorer reads instead:

- ANSI escape sequences (CSI, OSC, DCS/SOS/PM/APC, two-character escapes) are removed;
- format characters (Unicode category ``Cf``: zero-width space, joiners, BOM, soft hyphen,
  bidirectional controls, tag characters) are removed;
- control characters (``Cc``) are removed, except tab, line feed and carriage return, which
  stay, and the separators that end a line or a field (vertical tab, form feed, the
  information separators, next line), which become a space;
- the rest is put in Unicode NFKC (compatibility forms folded: full-width letters, ligatures,
  the non-breaking space), one character and its combining marks at a time.

Printable ASCII passes through untouched (one look at its bytes), so the spec's worked
examples and every clean answer give the same bytes as before. The result keeps a map to the
original, so evidence offsets can be given in the original text
(:meth:`NormalisedText.original_span`). The version string goes into the tokenizer versions,
so a verdict records which normalisation it saw.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache

#: Names this normalisation in tokenizer versions (and so in every config digest).
VERSION = "clean/1:ansi,cf,cc,nfkc"

_ANSI = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[ -/]*[0-~]"  # two-character and nF escapes
    r"|\x1b"  # a lone escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the 8-bit CSI
)
#: CPython's ``str.lower``, called as any Python callable. Compiled by mypyc
#: (verdictflow/compiled_scorers.py), ``text.lower()`` becomes mypyc's own lowercasing, which
#: maps each character alone: it misses Unicode's one context rule, a capital sigma at a
#: word's end ("ΟΔΟΣ" became "οδοσ" where CPython gives "οδος"), and a compiled worker's token
#: sets differed from ``verdictflow eval``'s on Greek capitals (found 2026-11-30; mypyc 2.4.1
#: on Python 3.11). A call through this name is not compiled into mypyc's version.
_STR_LOWER: Callable[[str], str] = str.lower


def lower(text: str) -> str:
    """``text.lower()`` exactly as CPython does it, compiled or not (see :data:`_STR_LOWER`):
    every lowercasing in the compiled scorers goes through here."""
    return _STR_LOWER(text)


#: Control characters that end a line or a field: a space, so words on either side stay apart.
_TO_SPACE = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"
#: The bytes of plain text: printable ASCII, tab, LF and CR. Anything else needs a look.
_PLAIN_BYTES = b"\t\n\r" + bytes(range(0x20, 0x7F))


@dataclass(frozen=True, slots=True)
class _Piece:
    """A stretch of the original that did not pass through unchanged."""

    clean_start: int
    clean_end: int
    original_start: int
    original_end: int


@dataclass(frozen=True, slots=True)
class NormalisedText:
    """The normalised text, the original, and how positions in one map to the other."""

    text: str
    original: str
    pieces: tuple[_Piece, ...] = ()
    #: ``clean_start`` of each piece, for bisection.
    starts: tuple[int, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.pieces)

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original that ``text[start:end]`` came from: removed characters
        inside it are included, those just before or after it are not."""
        first = self._original_start(start)
        return first, max(first, self._original_end(end))

    def _original_start(self, position: int) -> int:
        i = bisect_right(self.starts, position) - 1
        if i < 0:
            return position
        piece = self.pieces[i]
        if position < piece.clean_end:
            return piece.original_start
        return piece.original_end + position - piece.clean_end

    def _original_end(self, position: int) -> int:
        i = bisect_left(self.starts, position) - 1
        if i < 0:
            return position
        piece = self.pieces[i]
        if position <= piece.clean_end:
            return piece.original_end
        return piece.original_end + position - piece.clean_end


@cache
def _pattern() -> re.Pattern[str]:
    """Escape sequences, removed characters, separators and runs of other non-ASCII text.
    The format characters are read from this Python's Unicode database once (the planes that
    have any: the BMP, plane 1, and the tag characters of plane 14)."""
    code_points = [*range(0x20000), *range(0xE0000, 0xE1000)]
    removed = "".join(
        re.escape(chr(c))
        for c in code_points
        if (unicodedata.category(chr(c)) == "Cf")
        or (unicodedata.category(chr(c)) == "Cc" and chr(c) not in "\t\n\r" + _TO_SPACE)
    )
    return re.compile(
        f"(?P<ansi>{_ANSI})|(?P<drop>[{removed}])|(?P<space>[{re.escape(_TO_SPACE)}])"
        f"|(?P<other>[\\x21-\\x7e]?[^\\x00-\\x7f{removed}{re.escape(_TO_SPACE)}]+)"
    )


#: Texts up to this many characters are memoised (the last ``_MEMO_ENTRIES``): a RAG
#: deployment retrieves the same documents again and again, and normalising a 1.5 KB abstract
#: that has a few non-ASCII characters cost a fifth of the inline gate's time. A pure function
#: of an immutable result, so the memo cannot change a verdict; lru_cache is thread-safe.
_MEMO_MAX_CHARS = 8192
_MEMO_ENTRIES = 512


def normalise(text: str) -> NormalisedText:
    """``text`` normalised (see the module docstring), with its map to the original."""
    if len(text) > _MEMO_MAX_CHARS:
        return _normalise(text)
    return _memoised_normalise(text)


def _needs_work(text: str) -> bool:
    """Whether ``text`` holds anything but printable ASCII, tab, LF and CR. Deleting the plain
    bytes and looking at what is left takes a quarter of the time of a regular-expression
    search for the first other character (1.0 against 4.4 us for a 600-character context)."""
    return not text.isascii() or bool(text.encode().translate(None, _PLAIN_BYTES))


def _normalise(text: str) -> NormalisedText:
    if not _needs_work(text):
        return NormalisedText(text, text)
    out: list[str] = []
    pieces: list[_Piece] = []
    length = 0  # of the normalised text so far
    position = 0  # in the original
    for match in _pattern().finditer(text):
        start, end = match.span()
        if start > position:
            out.append(text[position:start])
            length += start - position
        group = match.lastgroup
        if group == "other":
            for unit_start, unit_end, folded in _nfkc_units(match.group(), start):
                if folded is None:
                    out.append(text[unit_start:unit_end])
                    length += unit_end - unit_start
                else:
                    pieces.append(_Piece(length, length + len(folded), unit_start, unit_end))
                    out.append(folded)
                    length += len(folded)
        else:
            replacement = " " if group == "space" else ""
            pieces.append(_Piece(length, length + len(replacement), start, end))
            out.append(replacement)
            length += len(replacement)
        position = end
    out.append(text[position:])
    return NormalisedText("".join(out), text, tuple(pieces), tuple(p.clean_start for p in pieces))


_memoised_normalise = lru_cache(maxsize=_MEMO_ENTRIES)(_normalise)


def clean(text: str) -> str:
    """The normalised text alone (for scorers that need no offsets)."""
    return normalise(text).text


def _nfkc_units(run: str, offset: int) -> list[tuple[int, int, str | None]]:
    """``(start, end, folded)`` of each character of ``run`` (with its combining marks) at
    original position ``offset``; ``folded`` None where NFKC leaves it as it is. A run whose
    characters fold differently together than one by one (Hangul jamo) is one unit."""
    if unicodedata.is_normalized("NFKC", run):
        return [(offset, offset + len(run), None)]
    units: list[tuple[int, int, str | None]] = []
    start = 0
    for i in range(1, len(run) + 1):
        if i < len(run) and unicodedata.combining(run[i]):
            continue
        unit = run[start:i]
        folded = unicodedata.normalize("NFKC", unit)
        units.append((offset + start, offset + i, None if folded == unit else folded))
        start = i
    joined = "".join(run[s - offset : e - offset] if f is None else f for s, e, f in units)
    if not unicodedata.is_normalized("NFKC", joined):
        return [(offset, offset + len(run), unicodedata.normalize("NFKC", run))]
    return units
