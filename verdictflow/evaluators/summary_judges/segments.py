"""Relevance segments: the summary split on ``.``, ``;`` and newlines, each compared with the
article.

The spec asks for "Jaccard with article". A 15-word segment against a 700-word article has a
Jaccard of a few hundredths whatever it says, so every segment would be *None*. We use the
*containment* form of the resemblance measure (Broder 1997): the share of the segment's
content lemmas found in the best-matching article passage (two consecutive sentences, the same
window the claim check uses). It is 1.0 for a segment taken from the article, falls as the
segment brings words the passage lacks, and is asymmetric on purpose: the article saying more
than the segment is not irrelevance. The spec's bands then apply as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verdictflow.evaluators.summary_judges.claims import article_windows, best_window_support
from verdictflow.evaluators.summary_judges.rules import band
from verdictflow.evaluators.summary_judges.text import Parsed

MIN_SEGMENT_TOKENS = 6
RELEVANCE_BANDS = ((0.8, "High"), (0.3, "Some"))  # an overlap of exactly 0.8 is "Some"
_SPLIT = re.compile(r"[.;\n]")


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    overlap: float
    label: str  # High | Some | None


def split_segments(summary: Parsed) -> list[tuple[int, int, str]]:
    """(first token, end token, text) of each segment with at least 6 word tokens."""
    out = []
    start_char = 0
    bounds = [m.start() for m in _SPLIT.finditer(summary.text)] + [len(summary.text)]
    for end_char in bounds:
        idx = [
            i for i, t in enumerate(summary.tokens) if start_char <= t.idx < end_char and t.is_word
        ]
        if len(idx) >= MIN_SEGMENT_TOKENS:
            out.append((idx[0], idx[-1] + 1, summary.text[start_char:end_char].strip()))
        start_char = end_char + 1
    return out


def score_segments(summary: Parsed, article: Parsed) -> list[Segment]:
    windows = article_windows(article)
    out = []
    for start, end, text in split_segments(summary):
        toks = summary.content(start, end)
        overlap = best_window_support(toks, windows)[0] if toks else 0.0
        out.append(Segment(text, round(overlap, 4), band(overlap, RELEVANCE_BANDS, "None")))
    return out
