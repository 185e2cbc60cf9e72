"""The faithfulness verdict's signals: what in an answer is not backed by its contexts, and how.

The hallucination score (spec 003) averages its anchors, so one wrong name among nine anchors
weighs 0.11 while a harmless paraphrase adds unsupported words. These signals keep the
information that averaging throws away, each a number the learned model
(:mod:`~verdictflow.evaluators.faithfulness`) weighs, and each with the spans that explain it:

The **support** signals say how much of the answer the contexts back at all (the gross
failures: an answer about something else, a summary of another article):

- **Q1** groundedness, the share of the answer's content words found anywhere in the contexts
  (``novel_word_share``) and of its content bigrams (``novel_bigram_share``);
- **alignment**: for each answer sentence, the share of its content words that its best context
  sentence holds; the mean and the worst sentence's.

The **detail** signals look for the one wrong fact among many right ones:

- **fabricated facts**: unsupported named entities, numbers, dates and times from the
  hallucination check, as a count and as shares by kind (severity: one of them is a made-up fact,
  however many other anchors are supported);
- **novel named words**: proper nouns and numbers found nowhere in the contexts, counted and as a
  share of the answer's named words (a novel proper noun is rarely a paraphrase; a novel verb
  often is, so novel common words are left to the support factor);
- **misplaced words**: words of an answer sentence that occur in the contexts, but not around
  the passage that supports the rest of their sentence ("the Moscow embassy" when Moscow is in
  another paragraph; the other speaker's name in a chat);
- **added negation**: a negated answer sentence whose supporting sentences are not negated.

Each signal that counts something against the answer also returns the spans (:class:`Finding`)
behind it, which the verdict's evidence lists.

Pure: plain values in, plain values out; no model, no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verdictflow.evaluators.evidence_index import EvidenceIndex, Span, context_excerpt
from verdictflow.evaluators.hallucination import HallucinationResult

#: Anchor kinds that state a fact: one unsupported is a fabricated fact.
FACT_KINDS = frozenset({"entity", "number", "date", "time"})
#: Answer words that negate their clause.
NEGATIONS = frozenset({"not", "n't", "never", "no", "nobody", "nothing", "none", "neither", "nor"})
#: A word whose deficit (see ``_deficits``) is at least this is counted as misplaced.
MISPLACED_DEFICIT = 0.5


@dataclass(frozen=True, slots=True)
class AnswerToken:
    """A content word of the answer: its forms, part of speech and character span."""

    lower: str
    lemma: str
    pos: str
    start: int
    end: int
    entity: bool  # inside a named entity or number the NER found


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    """One answer sentence: its span, content words and whether it is negated."""

    start: int
    end: int
    tokens: tuple[AnswerToken, ...]
    negated: bool


def answer_sentences(doc: Any) -> tuple[AnswerSentence, ...]:
    """The answer's sentences from its parsed ``Doc``. Content words: not punctuation or space,
    with a letter or digit, and not a stop word unless a number or inside an entity (spaCy's
    stop list has "two" and "three", which a wrong count must not hide behind)."""
    sentences = []
    for sent in doc.sents:
        tokens = tuple(
            AnswerToken(
                lower=t.lower_,
                lemma=t.lemma_.lower(),
                pos="NUM" if t.like_num else t.pos_,
                start=t.idx,
                end=t.idx + len(t.text),
                entity=bool(t.ent_type_),
            )
            for t in sent
            if not (t.is_punct or t.is_space)
            and (not t.is_stop or t.like_num or t.ent_type_)  # "two", "Three Rivers"
            and any(c.isalnum() for c in t.text)
        )
        negated = any(t.lower_ in NEGATIONS or t.dep_ == "neg" for t in sent)
        sentences.append(AnswerSentence(sent.start_char, sent.end_char, tokens, negated))
    return tuple(sentences)


@dataclass(frozen=True, slots=True)
class Finding:
    """A span of the answer that a signal counts against it, and why."""

    signal: str
    text: str
    start: int
    end: int
    detail: str = ""
    context: int | None = None
    context_span: Span | None = None

    def evidence(self, contexts: Sequence[EvidenceIndex]) -> dict[str, Any]:
        record: dict[str, Any] = {
            "signal": self.signal,
            "text": self.text,
            "start": self.start,
            "end": self.end,
        }
        if self.detail:
            record["detail"] = self.detail
        if self.context is not None and self.context_span is not None:
            record["context"] = context_excerpt(contexts, self.context, self.context_span)
        return record


@dataclass(frozen=True, slots=True)
class Signals:
    """Named signal values (in :data:`SIGNAL_NAMES` order) and the findings behind them."""

    values: dict[str, float]
    findings: tuple[Finding, ...]


#: The signals of the *support* factor: how much of the answer the contexts back at all.
SUPPORT_SIGNALS: tuple[str, ...] = (
    "groundedness",
    "mean_sentence_coverage",
    "min_sentence_coverage",
    "novel_bigram_share",
    "novel_word_share",
)
#: The signals of the *detail* factor: a fabricated or misplaced fact, an added negation.
DETAIL_SIGNALS: tuple[str, ...] = (
    "novel_named_share",
    "fabricated_facts",
    "negation_added",
    "novel_propn",
    "novel_number",
    "unsupported_entity_share",
    "unsupported_number_share",
    "misplaced_words",
)
#: Every signal, in the order the model file lists them.
SIGNAL_NAMES: tuple[str, ...] = SUPPORT_SIGNALS + DETAIL_SIGNALS


def _found(token: AnswerToken, terms: frozenset[str]) -> bool:
    return token.lower in terms or token.lemma in terms


@dataclass(frozen=True, slots=True)
class _Sentence:
    context: int
    start: int
    end: int
    terms: frozenset[str]
    negated: bool


def _context_sentences(contexts: Sequence[EvidenceIndex]) -> list[_Sentence]:
    return [
        _Sentence(i, s.start, s.end, s.terms, bool(s.negated))
        for i, index in enumerate(contexts)
        for s in index.sentences
    ]


def _share(count: float, total: int) -> float:
    return count / total if total else 0.0


def _log_count(count: int) -> float:
    """Counts enter the model as log(1 + n): the first fabricated fact matters most."""
    return math.log1p(count)


#: Context sentences on each side that a window adds: a summary sentence often joins a
#: sentence and the next, and a pronoun's name is in the sentence before.
WINDOW = 1


def _windows(candidates: Sequence[_Sentence]) -> list[frozenset[str]]:
    windows = []
    for i, sentence in enumerate(candidates):
        terms = set(sentence.terms)
        for j in range(max(0, i - WINDOW), min(len(candidates), i + WINDOW + 1)):
            if candidates[j].context == sentence.context:
                terms |= candidates[j].terms
        windows.append(frozenset(terms))
    return windows


def _deficits(tokens: Sequence[AnswerToken], windows: Sequence[frozenset[str]]) -> list[float]:
    """For each word of an answer sentence that the contexts contain: how much less of the rest
    of its sentence occurs around it than around the best-supporting passage. A word taken from
    another passage ("Moscow" from the paragraph about the embassy's staff, the other speaker's
    name in a chat) has a high deficit; a word in the passage that supports the sentence, 0."""
    n = len(tokens)
    if n < 2 or not windows:
        return [0.0] * n
    covered = [frozenset(i for i, t in enumerate(tokens) if _found(t, w)) for w in windows]
    best_without = [max(len(c - {i}) for c in covered) for i in range(n)]
    deficits = []
    for i in range(n):
        around = [len(c) - 1 for c in covered if i in c]
        if not around:  # found nowhere: a novel word, counted by the novelty signals
            deficits.append(0.0)
            continue
        deficits.append(max(0, best_without[i] - max(around)) / (n - 1))
    return deficits


def _alignment(
    sentence: AnswerSentence, candidates: Sequence[_Sentence]
) -> tuple[float, list[_Sentence]]:
    """Coverage of the answer sentence's content words by its best context sentence, and its
    best pair of sentences (the best one plus the one adding most): a summary sentence often
    joins two. Ties go to the earlier sentence, so the choice is deterministic."""
    tokens = sentence.tokens
    if not tokens or not candidates:
        return 0.0, []
    covered = [frozenset(i for i, t in enumerate(tokens) if _found(t, c.terms)) for c in candidates]
    best = max(range(len(candidates)), key=lambda i: (len(covered[i]), -i))
    second = max(range(len(candidates)), key=lambda i: (len(covered[best] | covered[i]), -i))
    chosen = [candidates[best]] + ([candidates[second]] if second != best else [])
    return len(covered[best]) / len(tokens), chosen


def compute_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    result: HallucinationResult,
    contexts: Sequence[EvidenceIndex],
    groundedness: float,
) -> Signals:
    """Every signal of one answer against its contexts (see the module docstring)."""
    values: dict[str, float] = {"groundedness": groundedness}
    findings: list[Finding] = []
    _anchor_signals(result, values, findings)
    candidates = _context_sentences(contexts)
    all_terms: frozenset[str] = frozenset().union(*(c.terms for c in candidates))
    _novelty_signals(sentences, answer_text, all_terms, contexts, values, findings)
    _alignment_signals(sentences, answer_text, candidates, values, findings)
    return Signals({name: values[name] for name in SIGNAL_NAMES}, tuple(findings))


def _anchor_signals(
    result: HallucinationResult, values: dict[str, float], findings: list[Finding]
) -> None:
    """Support of the hallucination check's anchors, by kind; unsupported facts as findings."""
    checks = result.checks

    def unsupported_share(kinds: frozenset[str]) -> float:
        mine = [c for c in checks if c.anchor.kind in kinds]
        return _share(sum(c.support == "unsupported" for c in mine), len(mine))

    values["unsupported_entity_share"] = unsupported_share(frozenset({"entity"}))
    values["unsupported_number_share"] = unsupported_share(frozenset({"number", "date", "time"}))
    fabricated = [c for c in checks if c.support == "unsupported" and c.anchor.kind in FACT_KINDS]
    values["fabricated_facts"] = _log_count(len(fabricated))
    for check in fabricated:
        a = check.anchor
        findings.append(
            Finding("fabricated_facts", a.text, a.start, a.end, f"{a.kind} {a.label} not found")
        )


#: The signal a novel named word is listed under, by part of speech (other entity words:
#: ``novel_named_share``).
_NOVEL_SIGNAL = {"PROPN": "novel_propn", "NUM": "novel_number"}


def _named(token: AnswerToken) -> bool:
    """A proper noun, a number or a word inside a named entity: what a paraphrase keeps."""
    return token.pos in ("PROPN", "NUM") or token.entity


def _novelty_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    all_terms: frozenset[str],
    contexts: Sequence[EvidenceIndex],
    values: dict[str, float],
    findings: list[Finding],
) -> None:
    """Answer words and bigrams the contexts never contain; named ones as findings."""
    tokens = [t for s in sentences for t in s.tokens]
    novel = [t for t in tokens if not _found(t, all_terms)]
    values["novel_word_share"] = _share(len(novel), len(tokens))
    values["novel_propn"] = _log_count(sum(t.pos == "PROPN" for t in novel))
    values["novel_number"] = _log_count(sum(t.pos == "NUM" for t in novel))
    named = [t for t in tokens if _named(t)]
    novel_named = [t for t in novel if _named(t)]
    values["novel_named_share"] = _share(len(novel_named), len(named))
    for token in novel_named:
        signal = _NOVEL_SIGNAL.get(token.pos, "novel_named_share")
        findings.append(
            Finding(signal, answer_text[token.start : token.end], token.start,
                    token.end, f"{token.pos} found nowhere in the contexts")
        )  # fmt: skip
    pairs = [(a.lower, b.lower) for s in sentences for a, b in itertools.pairwise(s.tokens)]
    context_bigrams: frozenset[tuple[str, str]] = frozenset().union(
        *(c.content_bigrams for c in contexts)
    )
    values["novel_bigram_share"] = _share(sum(p not in context_bigrams for p in pairs), len(pairs))


def _alignment_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    candidates: Sequence[_Sentence],
    values: dict[str, float],
    findings: list[Finding],
) -> None:
    """Per answer sentence: its best-supporting context sentence and coverage, its misplaced
    words, and a negation its support does not have."""
    coverages = []
    negation_added = misplaced = 0
    windows = _windows(candidates)
    for sentence in sentences:
        if not sentence.tokens:
            continue
        for token, deficit in zip(
            sentence.tokens, _deficits(sentence.tokens, windows), strict=True
        ):
            if deficit >= MISPLACED_DEFICIT:
                misplaced += 1
                findings.append(
                    Finding("misplaced_words", answer_text[token.start : token.end],
                            token.start, token.end, f"deficit {deficit:.2f}: in the contexts, "
                            "away from the rest of its sentence")
                )  # fmt: skip
        best, chosen = _alignment(sentence, candidates)
        coverages.append(best)
        if sentence.negated and chosen and not any(c.negated for c in chosen):
            negation_added += 1
            findings.append(
                Finding("negation_added", answer_text[sentence.start : sentence.end][:200],
                        sentence.start, sentence.end, "negated; its supporting sentences are "
                        "not", chosen[0].context, (chosen[0].start, chosen[0].end))
            )  # fmt: skip
    values["min_sentence_coverage"] = min(coverages, default=0.0)
    values["mean_sentence_coverage"] = _share(sum(coverages), len(coverages))
    values["negation_added"] = _log_count(negation_added)
    values["misplaced_words"] = _log_count(misplaced)
