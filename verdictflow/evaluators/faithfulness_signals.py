"""The faithfulness verdict's signals: what in an answer is not backed by its contexts, and how.

The hallucination score (spec 003) averages its anchors, so one wrong name among nine anchors
weighs 0.11 while a harmless paraphrase adds unsupported words. These signals keep the
information that averaging throws away, each a number the learned model
(:mod:`~verdictflow.evaluators.faithfulness`) weighs, and each with the spans that explain it.

Every signal is **order-invariant** (it compares sets of words and lemmas, per answer sentence
against its best context sentence; none depends on the order of words), **bounded** (a share in
[0, 1], or a count entering as ``log(1 + min(n, 3))``), and has a **direction fixed before
fitting** (:data:`DIRECTIONS`). A first version had a content-bigram novelty signal and
unbounded counts: on HaluEval, whose right answers are short spans copied from the knowledge,
both separate by length and word order alone, and the fit learned that artifact, so "Paris is
the capital of France." failed against "France's capital ... is Paris" (docs/verdicts/
faithfulness.md, "Decisions").

The **support** signals say how much of the answer the contexts back at all (the gross
failures: an answer about something else, a summary of another article):

- **Q1** groundedness, and the share of the answer's content words found nowhere in the
  contexts (``novel_word_share``); Q1 of its claims alone (``claim_groundedness``: a question
  back to the user or a pleasantry is no claim), which bounds the score
  (:mod:`~verdictflow.evaluators.faithfulness_model`, the ceiling);
- **alignment**: for each answer sentence, the share of its content words (words or lemmas)
  that its best context sentence holds; the mean and the worst sentence's;
- **paraphrase**: the same coverage counting also the words that *stand in* for a word of the
  supporting sentences that the answer sentence dropped (WordNet: a synonym, a similar
  adjective, a derived form, or a more general word: "remote" for "distant", "tree" for
  "oak"; not "provincial" for its sister "federal"), and the share of the answer's new common
  words that do (``paraphrased_share``; 1 when it has none). Error analysis on SummEdits: its
  faithful edits are paraphrases that add new words, its unfaithful ones swap in words that
  stand for nothing the source says, and every plain count of new words ranked them backwards.

The **detail** signals look for the one wrong fact among many right ones:

- **fabricated facts**: unsupported named entities and numbers, dates and times with a value
  (the hallucination check's anchors; "the night before" has no value and is left to the
  support signals) with something new to the contexts, a word or the digits taken together
  (one with nothing new failed the check on its form: "98. 7 per cent" in text detokenised
  from a PDF), as a count and as shares by kind (severity: one of them is a made-up fact,
  however many other anchors are supported);
- **novel names**: proper nouns and numbers found nowhere in the contexts, counted, and as a
  share of the answer's named words (a novel proper noun is rarely a paraphrase; a novel verb
  often is, so novel common words are left to the support factor);
- **misplaced names** (``misplaced_names``): a name or number that occurs in the contexts, but
  not around the passage supporting the rest of its sentence ("the Moscow embassy" when Moscow
  is in another paragraph; the other speaker's name in a chat);
- **flipped negation** (``negation_flipped``): a negated answer sentence whose supporting
  sentences are not negated, or a word whose negating prefix its support does not have
  ("incorrect" where the context says "correct", "uncrewed" / "crewed");
- **antonym swaps** (``antonym_swaps``): an answer word the contexts never use whose WordNet
  antonym is in the passage supporting its sentence, the sentence not using that antonym itself
  ("decreases" where the support says "increases", "implicit" for "explicit"). Error analysis
  on SummEdits: such reversals PASSed, one new word weighing no more than a paraphrase's.

Each signal that counts something against the answer also returns the spans (:class:`Finding`)
behind it, which the verdict's evidence lists.

Pure: plain values in, plain values out; no model, no I/O.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from verdictflow.evaluators.answer_claims import LEXICON_POS, AnswerSentence, AnswerToken
from verdictflow.evaluators.claim_alignment import (
    ContextSentence,
    Coverages,
    best_alignment,
    context_sentences,
    found_in,
)
from verdictflow.evaluators.evidence_index import EvidenceIndex, Span, context_excerpt, digit_runs
from verdictflow.evaluators.hallucination import AnchorCheck, HallucinationResult
from verdictflow.evaluators.quantities import NUMBER_WORDS
from verdictflow.evaluators.relation_frames import Frame
from verdictflow.evaluators.relations import conflicts
from verdictflow.evaluators.sentence_alignment import SentenceCoverage, SentenceIndex

#: Anchor kinds that state a fact: one unsupported, with something new in it, is made up.
FACT_KINDS = frozenset({"entity", "number", "date", "time"})
#: Prefixes that negate a word ("unpopular", "incorrect", "nonlinear"), with the shortest stem
#: each needs: "in" and its forms take five letters so that "inform" is not "not form".
NEGATING_PREFIXES: tuple[tuple[str, int], ...] = (
    ("un", 4), ("non", 4), ("in", 5), ("im", 5), ("il", 5), ("ir", 5),
)  # fmt: skip
#: Counts enter the model as ``log(1 + min(n, COUNT_CAP))``: the first fabricated fact
#: matters most, and a count cannot keep growing with the answer's length (on HaluEval the
#: hallucinated answers are the long ones; length is not what the model should learn).
COUNT_CAP = 3
#: A word whose deficit (``SentenceCoverage.deficits``) is at least this is counted as misplaced.
MISPLACED_DEFICIT = 0.5


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
class SentenceRelations:
    """An answer sentence's relations and those of its best-supporting context sentence
    (:mod:`~verdictflow.evaluators.relations`), which the analyzer parsed for it."""

    answer: Frame
    support: Frame
    context: int
    span: Span


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
    "novel_word_share",
    "paraphrased_share",
    "mean_paraphrase_coverage",
    "min_paraphrase_coverage",
    "claim_groundedness",
)
#: The signals of the *detail* factor: a fabricated or misplaced fact, a flipped negation.
DETAIL_SIGNALS: tuple[str, ...] = (
    "novel_named_share",
    "fabricated_facts",
    "negation_flipped",
    "novel_propn",
    "novel_number",
    "unsupported_entity_share",
    "unsupported_number_share",
    "misplaced_names",
    "antonym_swaps",
    "role_swaps",
    "misbound_facts",
    "order_conflicts",
)
#: The signals of the relation checks (:mod:`~verdictflow.evaluators.relations`), whose weights
#: the relation perturbation set teaches (``scoring_jobs/training/faithfulness_training.fit``).
RELATION_SIGNALS: tuple[str, ...] = ("role_swaps", "misbound_facts", "order_conflicts")
#: Every signal, in the order the model file lists them.
SIGNAL_NAMES: tuple[str, ...] = SUPPORT_SIGNALS + DETAIL_SIGNALS
_MORE_IS_BETTER = frozenset(
    {
        "groundedness",
        "mean_sentence_coverage",
        "min_sentence_coverage",
        "paraphrased_share",
        "mean_paraphrase_coverage",
        "min_paraphrase_coverage",
        "claim_groundedness",
    }
)
#: Which way each signal may move the score, fixed before fitting: +1, more of it can only
#: raise P(faithful); -1, only lower it. Training keeps every weight on its side of zero, so a
#: set where a signal runs the other way (on SummEdits, consistent edits are paraphrases that
#: add new words) can drive its weight to 0 but cannot turn it round.
DIRECTIONS: dict[str, int] = {n: 1 if n in _MORE_IS_BETTER else -1 for n in SIGNAL_NAMES}


def _share(count: float, total: int) -> float:
    return count / total if total else 0.0


def _log_count(count: int) -> float:
    """A count as the model reads it: ``log(1 + min(n, COUNT_CAP))``."""
    return math.log1p(min(count, COUNT_CAP))


def _flipped_prefix(token: AnswerToken, terms: frozenset[str]) -> str | None:
    """The word of ``terms`` that ``token`` negates or un-negates by a prefix ("incorrect" /
    "correct", "crewed" / "uncrewed"), if any."""
    for prefix, stem in NEGATING_PREFIXES:
        word = token.lower
        if word.startswith(prefix) and len(word) - len(prefix) >= stem:
            if word[len(prefix) :] in terms:
                return word[len(prefix) :]
        elif len(word) >= stem:
            for form in (word, token.lemma):
                if prefix + form in terms:
                    return prefix + form
    return None


def compute_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    result: HallucinationResult,
    contexts: Sequence[EvidenceIndex],
    groundedness: float,
    claim_groundedness: float,
    relations: Sequence[SentenceRelations] = (),
    coverages: Coverages | None = None,
) -> Signals:
    """Every signal of one answer against its contexts (see the module docstring);
    ``claim_groundedness``: Q1 of the answer's claims alone (its sentences less questions back
    and pleasantries), the score's ceiling in the packaged model; ``relations``: the answer's
    sentences parsed against their best-supporting context sentences (none: the relation
    signals are 0); ``coverages``: :func:`claim_coverages` of the same answer and contexts, when
    the caller has them already."""
    values: dict[str, float] = {
        "groundedness": groundedness, "claim_groundedness": claim_groundedness,
    }  # fmt: skip
    findings: list[Finding] = []
    # Questions back to the user and pleasantries state nothing: only claims are checked.
    chat = [(s.start, s.end) for s in sentences if not s.claim]
    sentences = [s for s in sentences if s.claim]
    if chat:
        result = _without(result, chat)
    candidates = context_sentences(contexts)
    all_terms: frozenset[str] = frozenset().union(*(c.terms for c in candidates))
    numbers = _context_numbers(contexts)
    novel = _novel_tokens(sentences, all_terms, numbers, contexts)
    _anchor_signals(result, novel, numbers, values, findings)
    _novelty_signals(sentences, answer_text, novel, values, findings)
    negated_clauses = _relation_signals(relations, answer_text, values, findings)
    _alignment_signals(
        sentences, answer_text, candidates, all_terms, values, findings, negated_clauses,
        dict(coverages) if coverages is not None else None,
    )  # fmt: skip
    return Signals({name: values[name] for name in SIGNAL_NAMES}, tuple(findings))


def _without(result: HallucinationResult, spans: Sequence[tuple[int, int]]) -> HallucinationResult:
    """The check's result without the anchors inside ``spans`` (sentences that claim nothing)."""
    checks = tuple(
        c for c in result.checks
        if not any(start <= c.anchor.start < end for start, end in spans)
    )  # fmt: skip
    return replace(result, checks=checks)


def _has_value(check: AnchorCheck) -> bool:
    """A fact the answer states precisely: a named entity, or a number, date or time with a
    parsed value. "The night before", "the second half" are DATE entities without one: a
    paraphrase of "the eve of" is not a fabricated date."""
    a = check.anchor
    if a.kind == "number":
        return a.quantity is not None
    if a.kind == "date":
        return a.date is not None and not a.date.empty
    if a.kind == "time":
        return a.time is not None
    return a.kind == "entity"


def _anchor_signals(
    result: HallucinationResult,
    novel: Sequence[AnswerToken],
    numbers: frozenset[tuple[str, ...]],
    values: dict[str, float],
    findings: list[Finding],
) -> None:
    """Fabricated fact anchors, by kind, as findings. A fact is fabricated when the
    hallucination check found no support for it *and* something in it is new to the contexts:
    one of its words, or, for a fact with digits, its digit runs taken together ("5 March 2021"
    is new against "12 March 2021" and "5 million", although each of its words occurs). A fact
    none of whose parts is new failed the check on its form, not its content: on text
    detokenised from a tokenised corpus or a PDF ("98. 7 per cent", "o' malley", "tuesday
    afternoon"). Counting every unsupported fact flagged 51 of QAGS CNN/DM's 235 summaries, as
    faithful as the rest (mean target 0.73 against 0.75). A right fact in the wrong place is
    left to ``misplaced_names``."""
    starts = sorted(t.start for t in novel)

    def fabricated(check: AnchorCheck) -> bool:
        a = check.anchor
        if check.support != "unsupported":
            return False
        first = bisect_left(starts, a.start)  # a novel word starts inside the anchor
        if first < len(starts) and starts[first] < a.end:
            return True
        runs = digit_runs(a.text)
        return bool(runs) and runs not in numbers

    fact_values, made_up = fact_signals(result, fabricated)
    values.update(fact_values)
    for check in made_up:
        a = check.anchor
        findings.append(
            Finding("fabricated_facts", a.text, a.start, a.end, f"{a.kind} {a.label} not found")
        )


def fact_signals(
    result: HallucinationResult, fabricated: Callable[[AnchorCheck], bool]
) -> tuple[dict[str, float], list[AnchorCheck]]:
    """``fabricated_facts`` and the unsupported shares by kind of the check's fact anchors
    under the rule ``fabricated``, and the fabricated anchors. Its own function so that the
    validation bench can recompute the previous version's signals (its rule: every anchor the
    check found unsupported) by the same arithmetic."""
    facts = [c for c in result.checks if c.anchor.kind in FACT_KINDS and _has_value(c)]

    def fabricated_share(kinds: frozenset[str]) -> float:
        mine = [c for c in facts if c.anchor.kind in kinds]
        return _share(sum(fabricated(c) for c in mine), len(mine))

    made_up = [c for c in facts if fabricated(c)]
    return {
        "unsupported_entity_share": fabricated_share(frozenset({"entity"})),
        "unsupported_number_share": fabricated_share(frozenset({"number", "date", "time"})),
        "fabricated_facts": _log_count(len(made_up)),
    }, made_up


def _context_numbers(contexts: Sequence[EvidenceIndex]) -> frozenset[tuple[str, ...]]:
    return frozenset().union(*(c.written_numbers() for c in contexts))


def _novel_tokens(
    sentences: Sequence[AnswerSentence],
    all_terms: frozenset[str],
    numbers: frozenset[tuple[str, ...]],
    contexts: Sequence[EvidenceIndex],
) -> list[AnswerToken]:
    """Answer words the contexts never contain: not as a word or a lemma; for a word with
    digits, not as its digits in any separator or unit ("98.7" is in "98. 7 per cent"); for a
    name of 2-6 letters, not as the initials of a name a context spells out ("US" is "the
    United States"), as the hallucination check reads them.

    A whole number up to twenty, or a ten up to ninety, is also found as its word before the
    same next word ("2 platinum" in "two platinum and five gold albums", "50 years" in "fifty
    years"; :func:`_spelled_before`), never as a number word alone: a number word anywhere in
    a long article then vouched for a made-up digit ("beat them 3-1" where the article has
    "4-1" and, elsewhere, "three") on QAGS XSum (issue 43)."""

    def found(token: AnswerToken, following: Sequence[AnswerToken]) -> bool:
        if found_in(token, all_terms):
            return True
        runs = digit_runs(token.lower)
        if runs:
            return runs in numbers or _spelled_before(token, following, contexts)
        return token.named and any(c.find_acronym(token.lower) for c in contexts)

    return [t for s in sentences for i, t in enumerate(s.tokens) if not found(t, s.tokens[i + 1 :])]


def _spelled_before(
    token: AnswerToken, following: Sequence[AnswerToken], contexts: Sequence[EvidenceIndex]
) -> bool:
    """Whether a context writes ``token`` (digits only: up to twenty, or a ten up to ninety) as
    its word followed by the answer's next word: "2 platinum" and "two platinum", "50 years"
    and "fifty years"."""
    word = NUMBER_WORDS.get(int(token.lower)) if token.lower.isdecimal() else None
    if word is None or not following:
        return False
    phrase = (word, following[0].lower)
    return any(c.find_phrase(phrase) is not None for c in contexts)


def _novelty_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    novel: Sequence[AnswerToken],
    values: dict[str, float],
    findings: list[Finding],
) -> None:
    """The answer's novel words (:func:`_novel_tokens`); named ones as findings.
    ``novel_number`` counts written numbers only: a number word ("two friends", "the second
    half") is often an inference or a phrase, and the hallucination check's value comparison
    ("two" = "2") is what tells a wrong count (``fabricated_facts``)."""
    tokens = [t for s in sentences for t in s.tokens]
    written = [t for t in novel if t.pos == "NUM" and digit_runs(t.lower)]
    values["novel_word_share"] = _share(len(novel), len(tokens))
    values["novel_propn"] = _log_count(sum(t.pos == "PROPN" for t in novel))
    values["novel_number"] = _log_count(len(written))
    named = [t for t in tokens if t.named]
    novel_named = [t for t in novel if t.named]
    values["novel_named_share"] = _share(len(novel_named), len(named))
    written_ids = {id(t) for t in written}  # the same token objects; a list scan per token
    for token in novel_named:  # was quadratic in an answer of thousands of numbers
        signal = "novel_named_share"
        if token.pos == "PROPN":
            signal = "novel_propn"
        elif id(token) in written_ids:
            signal = "novel_number"
        findings.append(
            Finding(signal, answer_text[token.start : token.end], token.start,
                    token.end, f"{token.pos} found nowhere in the contexts")
        )  # fmt: skip


def _alignment_signals(
    sentences: Sequence[AnswerSentence],
    answer_text: str,
    candidates: Sequence[ContextSentence],
    all_terms: frozenset[str],
    values: dict[str, float],
    findings: list[Finding],
    negated_clauses: int = 0,
    known: dict[int, SentenceCoverage] | None = None,
) -> None:
    """Per answer sentence: its best-supporting context sentence and coverage, its misplaced
    words, and a negation its support does not have (``negated_clauses``: the clauses the
    relation check found negated in the support and not in the answer, counted with them)."""
    coverages: list[float] = []
    paraphrase_coverages: list[float] = []
    flipped = misplaced = swapped = new_words = paraphrased = 0
    index: SentenceIndex | None = None  # built only for coverages the caller does not have
    for sentence in sentences:
        if not sentence.tokens:
            continue
        coverage = known.get(sentence.start) if known is not None else None
        if coverage is None:
            if index is None:
                index = SentenceIndex(
                    [c.terms for c in candidates],
                    [c.context for c in candidates],
                    (w for s in sentences for t in s.tokens for w in (t.lower, t.lemma)),
                )
            coverage = index.coverage([(t.lower, t.lemma) for t in sentence.tokens])
        for token, deficit in zip(sentence.tokens, coverage.deficits(), strict=True):
            if deficit >= MISPLACED_DEFICIT and token.named:
                misplaced += 1
                findings.append(
                    Finding("misplaced_names", answer_text[token.start : token.end],
                            token.start, token.end, f"deficit {deficit:.2f}: in the contexts, "
                            "away from the rest of its sentence")
                )  # fmt: skip
        best, chosen = best_alignment(sentence, candidates, coverage)
        coverages.append(best)
        if not chosen:
            paraphrase_coverages.append(best)
            continue
        if sentence.negated and not any(c.negated for c in chosen):
            flipped += 1
            findings.append(
                Finding("negation_flipped", answer_text[sentence.start : sentence.end][:200],
                        sentence.start, sentence.end, "negated; its supporting sentences are "
                        "not", chosen[0].context, (chosen[0].start, chosen[0].end))
            )  # fmt: skip
        support_terms = frozenset().union(*(c.terms for c in chosen))
        # Words of the supporting sentences the answer sentence does not use: what a new word
        # may have replaced, by its antonym or by a stand-in.
        own = frozenset(t.lower for t in sentence.tokens) | {t.lemma for t in sentence.tokens}
        dropped = support_terms - own
        swapped += _antonym_swaps(sentence, answer_text, chosen, dropped, all_terms, findings)
        new, stand_ins = _paraphrases(sentence, dropped, all_terms)
        new_words += new
        paraphrased += stand_ins
        paraphrase_coverages.append(min(1.0, best + stand_ins / len(sentence.tokens)))
        for token in sentence.tokens:
            other = None if found_in(token, all_terms) else _flipped_prefix(token, support_terms)
            if other is not None:
                flipped += 1
                findings.append(
                    Finding("negation_flipped", answer_text[token.start : token.end],
                            token.start, token.end, f"its supporting sentence says {other!r}",
                            chosen[0].context, (chosen[0].start, chosen[0].end))
                )  # fmt: skip
    values["min_sentence_coverage"] = min(coverages, default=0.0)
    values["mean_sentence_coverage"] = _share(sum(coverages), len(coverages))
    values["misplaced_names"] = _log_count(misplaced)
    values["negation_flipped"] = _log_count(flipped + negated_clauses)
    values["antonym_swaps"] = _log_count(swapped)
    values["paraphrased_share"] = paraphrased / new_words if new_words else 1.0
    values["mean_paraphrase_coverage"] = _share(
        sum(paraphrase_coverages), len(paraphrase_coverages)
    )
    values["min_paraphrase_coverage"] = min(paraphrase_coverages, default=0.0)


def _paraphrases(
    sentence: AnswerSentence, dropped: frozenset[str], all_terms: frozenset[str]
) -> tuple[int, int]:
    """The sentence's new common words (not names; found nowhere in the contexts; of a part of
    speech the lexicon knows), and how many of them stand in for a word its supporting
    sentences have and the sentence itself does not ("remote" for "distant") without being
    the antonym of one."""
    new = [
        t for t in sentence.tokens
        if not t.named and t.pos in LEXICON_POS and not found_in(t, all_terms)
    ]  # fmt: skip
    # An antonym of a dropped word is a reversal (``antonym_swaps``), whatever else it might
    # stand for ("decreased" is a hyponym's relative of "slower" in the next sentence).
    return len(new), sum(
        not t.stands_for.isdisjoint(dropped) and t.antonyms.isdisjoint(dropped) for t in new
    )


def _antonym_swaps(
    sentence: AnswerSentence,
    answer_text: str,
    chosen: Sequence[ContextSentence],
    dropped: frozenset[str],
    all_terms: frozenset[str],
    findings: list[Finding],
) -> int:
    """Words of the sentence that the contexts never use and whose antonym its supporting
    sentences do use, unless the answer sentence uses that antonym too ("increase and
    decrease": ``dropped`` is the support's words the sentence does not use)."""
    count = 0
    for token in sentence.tokens:
        if not token.antonyms or found_in(token, all_terms):
            continue
        opposite = sorted(token.antonyms & dropped)
        if opposite:
            count += 1
            where = next(c for c in chosen if opposite[0] in c.terms)
            findings.append(
                Finding("antonym_swaps", answer_text[token.start : token.end], token.start,
                        token.end, f"its supporting sentence says {opposite[0]!r}",
                        where.context, (where.start, where.end))
            )  # fmt: skip
    return count


#: The relation conflicts that count as a flipped negation (the same fact, stated the other way).
_AS_NEGATION = {"negated_clauses": "negation_flipped"}


def _relation_signals(
    relations: Sequence[SentenceRelations],
    answer_text: str,
    values: dict[str, float],
    findings: list[Finding],
) -> int:
    """Role swaps, misbound values and contradicted comparisons, per answer sentence against
    its supporting sentence; returns the clauses the support negates (``negation_flipped``)."""
    counts = {"role_swaps": 0, "misbound_facts": 0, "order_conflicts": 0}
    negations = 0
    for item in relations:
        for conflict in conflicts(item.answer, item.support):
            signal = _AS_NEGATION.get(conflict.signal, conflict.signal)
            if signal == "negation_flipped":
                negations += 1
            else:
                counts[signal] += 1
            findings.append(
                Finding(signal, answer_text[conflict.start : conflict.end][:200],
                        conflict.start, conflict.end, conflict.detail, item.context, item.span)
            )  # fmt: skip
    for name, count in counts.items():
        values[name] = _log_count(count)
    return negations
