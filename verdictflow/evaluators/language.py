"""Whether a text is in a script the pipelines can analyse.

Every scorer here reads English: the spec tokenizer's words, NLTK's English keywords and
stop words, spaCy's English model (entities, lemmas, parse), WordNet. A text written in another
script gives them nothing to work with (a Chinese article is one unbroken "word" per clause to
``\\w+``, and spaCy's English model finds no sentences or entities in Arabic), and the scores
that came out were FAILs, not DEFERs (issue 33: a correct Chinese summary, faithfulness FAIL
0.284). So a text whose letters are mostly outside the Latin script is "unsupported": every
kind DEFERs with ``unsupported_language`` rather than score it.

A share, not a language identifier: an English answer quoting a Chinese name stays English;
other Latin-script languages pass (their words still match their contexts' words, and the
lexical kinds stay meaningful on them), which the docs say.
"""

from __future__ import annotations

import re

#: Letters of the Latin script (basic, Latin-1, Extended-A/B, Extended Additional). Text is
#: NFKC-normalised before this is asked, so full-width Latin letters are plain ones by then.
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_LETTER = re.compile(r"[^\W\d_]")
_ASCII_LETTER = re.compile(r"[A-Za-z]")
#: Below this share of Latin letters among its letters, a text is not analysable here.
MIN_LATIN_SHARE = 0.5


def latin_share(text: str) -> float | None:
    """The share of ``text``'s letters that are Latin; None when it has no letter. ASCII text
    (most of it) is answered without counting: its letters are all Latin."""
    if text.isascii():
        return 1.0 if _ASCII_LETTER.search(text) else None
    letters = len(_LETTER.findall(text))
    if not letters:
        return None
    return len(_LATIN_LETTER.findall(text)) / letters


def unsupported_script(text: str) -> bool:
    """Whether ``text`` has letters, mostly outside the Latin script."""
    share = latin_share(text)
    return share is not None and share < MIN_LATIN_SHARE
