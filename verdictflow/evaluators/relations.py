"""Who did what to whom, and which fact belongs to which thing: an answer sentence's relations
checked against its best-supporting context sentence.

The other faithfulness signals compare sets of words, so an answer that keeps every word of
its source and swaps two of them ("LinkedIn acquired Microsoft", "Porto has 545,000
residents" where the context gives Lisbon 545,000) scores like a faithful one. Relations need
structure: both sentences parsed by spaCy (the answer already is; of the contexts, only the one
sentence that best supports each answer sentence is, so the cost follows the answer's length,
never the contexts'), turned into plain frames (:mod:`~verdictflow.evaluators.relation_frames`)
and compared here:

- **roles** (``role_swaps``): each verb's agent and patients (subject, passive ``by`` agent,
  objects, datives, ``to`` / ``in`` obliques of verbs such as "lead to"), with passives turned
  active and converse verbs turned round ("X lost to Y" is "Y beat X"; "X studied with Y" is
  "Y taught X"; "X follows Y" is "Y precedes X"). The answer swaps roles when, for the same
  verb (or one of a small class: beat / defeat, buy / acquire / purchase...), the head of one
  of its patients is the context's agent's head and its own agent is not the context's agent;
  or when each agent sits in the other's object phrase ("Flowers communicate the location of
  honey bees"). Causal verbs (cause, lead to, result in, reduce) are verbs like the others, so
  a reversed cause is a role swap. Never checked: symmetric verbs (meet, marry, play,
  merge...), light verbs (be, have, say, think, give... whose objects are attributes, clauses
  or possessions), pronoun agents and patients (whom "he" means is not resolved here).
- **negation** (``negated_clauses``, counted in ``negation_flipped``): a context clause
  negated ("did not approve", "contained no lead") whose verb, agent and object the answer
  states without the negation. The other way round is ``negation_flipped``'s sentence check.
- **binding** (``misbound_facts``): the context sentence is cut into segments at commas,
  semicolons and coordinators ("Lisbon has 545,000 residents, | while Porto has 232,000"),
  a segment without a subject of its own inheriting the sentence's subject ("Curie won the
  physics prize in 1903 | and the chemistry prize in 1911"). A number, date or place value of
  the answer sits in one context segment; the answer's distinguishing words (names first, then
  other nouns and adjectives, found in exactly one segment; the noun the number counts, such as
  "residents", left out) are all in other segments, one of which states another value of the
  same kind and unit: the value is bound to the wrong thing. Only values written with digits,
  not ranges ("four", "10-11", "30 to 50" are approximate: SummEval false alarms).
- **order** (``order_conflicts``): comparatives ("longer than", "more massive than", "less
  than"), superlatives ("the largest share", "founded first") and temporal order ("before",
  "after") checked against the values the context segments state for each side: "The Amazon is
  longer than the Nile" against 6,400 and 6,650 km; with years, "older", "earlier" and "first"
  mean the smaller one. A superlative counts only when it says something of its clause's
  subject ("Patel received the largest share"; not "the patience of the most ardent fan").
  When only one side is singled out and the sentence states values in two parts, the other
  side's value is taken from the other part, unless a word of that side is also in the first
  part ("an engineer earns more than an NFL player" against "an engineer ($5.0M) earns more
  than an NFL Player($3.0M) and an MLB player ($2.9M)", where the NFL player's value is lost
  to the tokenizer: a BEGIN false alarm).

Each conflict is a :class:`Conflict` with the answer span and the context sentence, so the
evidence shows both. Pure: spaCy ``Span`` objects in, plain values out; no model, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from verdictflow.evaluators.relation_frames import (
    LIGHT_VERBS,
    SYMMETRIC_VERBS,
    VERB_CLASSES,
    Argument,
    Clause,
    Comparison,
    Frame,
    Segment,
    Value,
)


@dataclass(frozen=True, slots=True)
class Conflict:
    """A relation of the answer that its supporting context sentence states otherwise."""

    signal: str
    start: int  # in the answer
    end: int
    detail: str


def _same_verb(a: Clause, b: Clause) -> bool:
    """The same verb, or two of one :data:`VERB_CLASSES` group. Not WordNet's synonyms: they
    made "be" and "stand", "move" and "play", "claim" and "take" one verb (SummEval: 40 false
    role swaps in 1,600 summaries)."""
    if a.verb == b.verb:
        return True
    return any(a.verb in group and b.verb in group for group in VERB_CLASSES)


def role_swaps(answer: Frame, support: Frame) -> list[Conflict]:
    """Answer clauses whose patient is the agent of the same verb in the support, while the
    answer's own agent is not."""
    out = []
    for clause in answer.clauses:
        agent = _checked_agent(clause)
        if agent is None:
            continue
        for other in support.clauses:
            their_agent = _checked_agent(other)
            if their_agent is None or not _same_verb(clause, other):
                continue
            agent_kept = agent.named_in(their_agent) or their_agent.named_in(agent)
            patients = [p for p in clause.patients if not p.pronoun]
            # head to head: "the Supercoppa Italiana cup" is not the "cup" the answer won
            swapped = [p for p in patients if not p.forms.isdisjoint(their_agent.forms)]
            if not swapped and any(agent.named_in(q) for q in other.patients if not q.pronoun):
                # "Flowers communicate the location of honey bees": the roles exchanged inside
                # the phrases (each agent in the other's object phrase)
                swapped = [p for p in patients if their_agent.named_in(p)]
            if swapped and not agent_kept:
                out.append(Conflict(
                    "role_swaps", clause.start, clause.end,
                    f"{agent.head} -{clause.verb}-> {swapped[0].head}; the context "
                    f"has {their_agent.head} -{other.verb}-> "
                    f"{', '.join(p.head for p in other.patients)}",
                ))  # fmt: skip
                break
    return out


def _checked_agent(clause: Clause) -> Argument | None:
    """The agent of a clause whose roles say who did what to whom: a verb that is neither
    symmetric nor light, an agent that is not a pronoun (whom "he" means is not known here);
    None for any other clause."""
    if clause.verb in SYMMETRIC_VERBS or clause.verb in LIGHT_VERBS:
        return None
    if clause.agent is None or clause.agent.pronoun:
        return None
    return clause.agent


def negated_clauses(answer: Frame, support: Frame) -> list[Conflict]:
    """Answer clauses stated plainly whose verb, agent and patient the support states negated."""
    out = []
    for clause in answer.clauses:
        agent = _checked_agent(clause)
        if clause.negated or agent is None:
            continue
        for other in support.clauses:
            their_agent = _checked_agent(other)
            if not other.negated or their_agent is None or not _same_verb(clause, other):
                continue
            same_agent = agent.named_in(their_agent)
            same_patient = any(p.named_in(q) for p in clause.patients for q in other.patients)
            if same_agent and same_patient:
                out.append(Conflict(
                    "negated_clauses", clause.start, clause.end,
                    f"the context negates {other.verb!r}",
                ))  # fmt: skip
                break
    return out


def _home(words: Iterable[str], segments: Sequence[Segment], names_first: bool = True) -> set[int]:
    """The segments that the words single out: those holding a word found in exactly one
    segment (names first; other words when no name singles one out)."""
    words = set(words)
    for attribute in ("names", "numbers", "words") if names_first else ("words",):
        homes = set()
        for w in words:
            holding = [i for i, s in enumerate(segments) if w in getattr(s, attribute)]
            if len(holding) == 1:
                homes.add(holding[0])
        if homes:
            return homes
    return set()


#: A range of numbers ("10-11", "30 to 50"): not one value bound to one thing.
_RANGE = re.compile(r"\d\s*(?:-|–|to)\s*\d")


def misbound_facts(answer: Frame, support: Frame) -> list[Conflict]:
    """Answer values that the support states in a segment other than the one the answer's
    distinguishing words single out, that segment stating another value of the same kind."""
    if len(support.segments) < 2:
        return []
    out = []
    for segment in answer.segments:
        for value in segment.values:
            if sum(v.kind == value.kind for v in segment.values) > 1:
                continue  # "higher in 2021 than in 2020": not a binding
            written = answer.text[value.start - answer.offset : value.end - answer.offset]
            if not _is_single_value(written):
                continue  # "four", "10-11", "30 to 50": approximate (SummEval false alarms)
            holding = {
                i
                for i, s in enumerate(support.segments)
                if any(v.kind == value.kind and v.value == value.value for v in s.values)
            }
            if not holding:
                continue
            homes = _home(segment.names | segment.words, support.segments)
            if not homes or homes & holding:
                continue
            rival = next(
                (
                    v
                    for i in sorted(homes)
                    for v in support.segments[i].values
                    if v.kind == value.kind and v.value != value.value
                ),
                None,
            )
            if rival is None:
                continue
            text = answer.text[value.start - answer.offset : value.end - answer.offset]
            out.append(Conflict(
                "misbound_facts", value.start, value.end,
                f"{text!r} belongs to another part of the context sentence, which says "
                f"{support.text[rival.start - support.offset : rival.end - support.offset]!r}",
            ))  # fmt: skip
    return out


def _side_value(words: frozenset[str], support: Frame, kind: str | None) -> list[Value] | None:
    homes = _home(words, support.segments)
    if len(homes) != 1:
        return None
    segment = support.segments[homes.pop()]
    return [v for v in segment.values if (kind is None or v.kind == kind)
            and support.text[v.start - support.offset : v.end - support.offset].lower()
            not in words]  # fmt: skip


def order_conflicts(answer: Frame, support: Frame) -> list[Conflict]:
    """Comparatives, superlatives and before/after that the support's values contradict."""
    return [
        Conflict("order_conflicts", comp.start, comp.end, why)
        for comp, why in _compared(answer, support)
        if why is not None
    ]


def confirmed_comparisons(answer: Frame, support: Frame) -> list[Comparison]:
    """Comparatives, superlatives and before/after that the support's values bear out ("the
    Nile is longer than the Amazon" against 6,650 and 6,400 km): an inference whose words the
    support need not use (the faithfulness ceiling counts the sentence as covered)."""
    return [comp for comp, why in _compared(answer, support) if why is None]


def _compared(answer: Frame, support: Frame) -> Iterator[tuple[Comparison, str | None]]:
    """Each comparison of the answer that the support's values decide, with why they
    contradict it (None: they bear it out)."""
    segments = support.segments
    for comp in answer.comparisons:
        mine = _side_value(comp.subject, support, None)
        if comp.other is None:  # superlative: the subject's value against all of its kind
            if not mine:
                continue
            value = mine[0]
            peers = [v.value for s in segments for v in s.values if v.kind == value.kind]
            if len(peers) < 2:
                continue
            larger = comp.larger(value.kind)
            if larger is None:
                continue
            best = max(peers) if larger else min(peers)
            if value.value != best:
                yield comp, "is not the " + ("largest" if larger else "smallest")
            else:
                yield comp, None
            continue
        theirs = _side_value(comp.other, support, None)
        if (mine is None) != (theirs is None):
            dated = [i for i, s in enumerate(segments) if s.values]
            if len(dated) != 2:
                continue
            known = _home(comp.subject if mine is not None else comp.other, segments)
            rest = [i for i in dated if i not in known]
            unknown = comp.other if mine is not None else comp.subject
            if len(rest) != 1 or any(w in segments[k].words for k in known for w in unknown):
                continue  # the unknown side may be in the known side's part: no guess
            found = list(segments[rest[0]].values)
            mine, theirs = (mine, found) if mine is not None else (found, theirs)
        if not mine or not theirs:
            continue
        pair = next(((a, b) for a in mine for b in theirs if a.kind == b.kind), None)
        if pair is None or pair[0].value == pair[1].value:
            continue
        a, b = pair
        larger = comp.larger(a.kind)
        if larger is None:
            continue
        holds = a.value > b.value if larger else a.value < b.value
        yield comp, None if holds else "the context's values say otherwise"


def checkable(answer: Frame) -> bool:
    """Whether any check can find something in this answer sentence: a clause with roles to
    check, a comparison, or a value written with digits. The analyzer parses the supporting
    sentence only then (most sentences of a summary are "X is Y" or "he said ...")."""
    if answer.comparisons or any(_checked_agent(c) is not None for c in answer.clauses):
        return True
    return any(
        _is_single_value(answer.text[v.start - answer.offset : v.end - answer.offset])
        for segment in answer.segments
        for v in segment.values
    )


def _is_single_value(written: str) -> bool:
    return any(c.isdigit() for c in written) and not _RANGE.search(written)


def conflicts(answer: Frame, support: Frame) -> list[Conflict]:
    """Every relation conflict between one answer sentence and its supporting sentence."""
    return (
        role_swaps(answer, support)
        + negated_clauses(answer, support)
        + misbound_facts(answer, support)
        + order_conflicts(answer, support)
    )
