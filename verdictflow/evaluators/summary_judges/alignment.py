"""Alignment: does the summary keep the article's tone, stance, intent and focus?

Signals (article vs summary), each in [0, 1]:
- **tone**: VADER compound sentiment (Hutto & Gilbert 2014, a lexicon model validated on news
  and social text), drift = |c_article - c_summary| / 2, doubled (capped at 1) on a polarity
  flip (both beyond +/-0.05 with opposite signs);
- **subjectivity**: share of words carrying VADER valence; drift = how much more subjective
  the summary is than the article (a neutral report turned into an opinion);
- **hedging**: share of hedge cues (may, reportedly, allegedly, ...; Hyland's hedging
  categories); drift = |difference| scaled x10 (a hedged claim stated as certain, or the reverse);
- **focus**: 1 - cosine between the article's and the summary's content-lemma frequency
  vectors (what the summary talks about vs what the article talks about);
- **meaning**: share of summary sentences whose negation differs from their best-matching
  article sentence (a negation flip inverts meaning while keeping the words).
Deviation D = weighted sum (weights below sum to 1). Spec bands (scored in
:mod:`~verdictflow.evaluators.summary_judges.rubric`): no distortion (D <= 0.1) maps to 10..9,
mild drift (D <= 0.35) to 8..6, severe to 3..0.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verdictflow.evaluators.summary_judges.judgements import Alignment
from verdictflow.evaluators.summary_judges.text import Parsed

WEIGHTS = {"tone": 0.3, "subjectivity": 0.15, "hedging": 0.1, "focus": 0.3, "meaning": 0.15}
HEDGES = frozenset(
    [
        "may",
        "might",
        "could",
        "possibly",
        "perhaps",
        "reportedly",
        "allegedly",
        "apparently",
        "seemingly",
        "likely",
        "unlikely",
        "suggest",
        "suggests",
        "suggested",
        "appear",
        "appears",
        "appeared",
        "seem",
        "seems",
        "seemed",
        "claim",
        "claims",
        "claimed",
        "estimate",
        "estimated",
        "believe",
        "believed",
        "unconfirmed",
        "probably",
        "presumably",
    ]
)
NEGATIONS = frozenset({"not", "n't", "no", "never", "nobody", "nothing", "neither", "nor"})


@lru_cache(maxsize=1)
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@dataclass(frozen=True, slots=True)
class Profile:
    tone: float  # VADER compound
    subjectivity: float
    hedging: float
    focus: Counter[str]

    def describe(self, limit: int) -> str:
        """A compact intent/stance/tone line of at most ``limit`` tokens."""
        tone = "positive" if self.tone > 0.05 else "negative" if self.tone < -0.05 else "neutral"
        stance = "hedged report" if self.hedging > 0.01 else "assertive report"
        subj = "opinionated" if self.subjectivity > 0.15 else "factual"
        focus = [k for k, _ in sorted(self.focus.items(), key=lambda kv: (-kv[1], kv[0]))]
        head = f"tone: {tone} ({self.tone:+.2f}); stance: {stance}; intent: {subj}; focus:"
        room = max(0, limit - len(head.split()))
        return " ".join([head, *focus[:room]])


def profile(doc: Parsed) -> Profile:
    words = [t for t in doc.tokens if t.is_word]
    lex = _vader().lexicon
    n = max(1, len(words))
    return Profile(
        tone=float(_vader().polarity_scores(doc.text)["compound"]),
        subjectivity=sum(1 for t in words if t.lower in lex) / n,
        hedging=sum(1 for t in words if t.lower in HEDGES) / n,
        focus=Counter(t.key for t in doc.tokens if t.is_content),
    )


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    dot = math.fsum(a[k] * b[k] for k in a.keys() & b.keys())
    na = math.sqrt(math.fsum(v * v for v in a.values()))
    nb = math.sqrt(math.fsum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def _negated(doc: Parsed, start: int, end: int) -> bool:
    return any(t.lower in NEGATIONS or t.dep == "neg" for t in doc.tokens[start:end])


def negation_flips(summary: Parsed, article: Parsed) -> int:
    """Summary sentences whose negation differs from their most similar article sentence."""
    art_keys = article.sentence_keys()
    flips = 0
    for s in summary.sentences:
        keys = summary.content_keys(s.start, s.end)
        if not keys or not art_keys:
            continue
        best = max(range(len(art_keys)), key=lambda i: (len(keys & art_keys[i]), -i))
        a = article.sentences[best]
        if _negated(summary, s.start, s.end) != _negated(article, a.start, a.end):
            flips += 1
    return flips


def alignment_judgement(summary: Parsed, article: Parsed, intent_tokens: int) -> Alignment:
    """The alignment judgement: both intents and the deviation D (scored by
    :func:`~verdictflow.evaluators.summary_judges.rubric.alignment`)."""
    pa, ps = profile(article), profile(summary)
    tone = abs(pa.tone - ps.tone) / 2
    if abs(pa.tone) > 0.05 and abs(ps.tone) > 0.05 and (pa.tone > 0) != (ps.tone > 0):
        tone = min(1.0, 2 * tone)
    n_sent = max(1, len(summary.sentences))
    drift = {
        "tone": tone,
        "subjectivity": min(1.0, max(0.0, ps.subjectivity - pa.subjectivity) * 4),
        "hedging": min(1.0, abs(pa.hedging - ps.hedging) * 10),
        "focus": 1.0 - _cosine(pa.focus, ps.focus),
        "meaning": negation_flips(summary, article) / n_sent,
    }
    d = math.fsum(WEIGHTS[k] * v for k, v in drift.items())
    return Alignment(
        article_intent=pa.describe(intent_tokens),
        summary_intent=ps.describe(intent_tokens),
        deviations={k: round(v, 4) for k, v in drift.items()},
        deviation=min(1.0, max(0.0, d)),
    )
