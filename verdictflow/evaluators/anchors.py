"""Fact anchors of an answer, from a parsed spaCy ``Doc``: numbers, dates, times, named
entities and assertive subject-verb-object claims (spec 003, step 1).

Pure: takes a ``Doc`` the driver parsed (``nlp.pipe`` over a batch) and returns plain values
with character offsets into the answer. Hedged claims are not anchors (the speaker did not
assert them); they are returned separately so a verdict can show what was filtered and why.

Named entities (people, organisations, places, works, events...) are anchors in addition to the
spec's numbers, dates and claims: an answer that names the wrong person asserts a fact as surely
as one that states the wrong year, and short factual answers ("Arthur's Magazine") often carry
no other anchor. ``HallucinationPolicy.entity_anchors`` turns them off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from verdictflow.evaluators.quantities import (
    DatePoint,
    Quantity,
    parse_date,
    parse_quantity,
    parse_time,
)

NUMBER_LABELS = frozenset({"MONEY", "CARDINAL", "PERCENT", "QUANTITY"})
DATE_LABELS = frozenset({"DATE"})
TIME_LABELS = frozenset({"TIME"})
ENTITY_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART", "PRODUCT", "LAW"}
)
#: Modal auxiliaries that hedge the verb they attach to (spec: "may", might, could...).
HEDGE_AUXILIARIES = frozenset({"may", "might", "could", "would", "should"})
HEDGE_ADVERBS = frozenset(
    {
        "possibly", "perhaps", "maybe", "probably", "likely", "apparently", "reportedly",
        "allegedly", "arguably", "supposedly", "presumably", "seemingly", "potentially",
        "conceivably", "purportedly", "perchance", "roughly", "approximately",
    }
)  # fmt: skip
#: Verbs of belief or appearance: their own clause is not a claim, nor the clause they govern.
HEDGE_VERBS = frozenset(
    {
        "seem", "appear", "suggest", "believe", "think", "guess", "suppose", "speculate",
        "assume", "suspect", "hope", "expect", "imagine", "doubt", "wonder", "estimate",
    }
)  # fmt: skip
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})
OBJECT_DEPS = frozenset({"dobj", "attr", "oprd", "dative", "acomp"})
PREP_OBJECT_DEPS = frozenset({"agent", "prep"})
LIGHT_VERBS = frozenset({"be", "have", "do"})

AnchorKind = Literal["number", "date", "time", "entity", "claim", "term"]
#: Parts of speech whose words become ``term`` anchors when an answer has no other anchor.
TERM_POS = frozenset({"NOUN", "PROPN", "ADJ", "NUM", "VERB"})


@dataclass(frozen=True, slots=True)
class Claim:
    """A subject-verb-object triple on lemmas; subject None when it is a pronoun."""

    subject: str | None
    verb: str
    obj: str
    negated: bool


@dataclass(frozen=True, slots=True)
class Anchor:
    """One checkable fact in the answer, with its character span there."""

    kind: AnchorKind
    label: str
    text: str
    start: int
    end: int
    quantity: Quantity | None = None
    date: DatePoint | None = None
    time: tuple[int, int] | None = None
    words: tuple[str, ...] = ()
    claim: Claim | None = None


@dataclass(frozen=True, slots=True)
class HedgedClaim:
    """A claim-shaped clause left out because it is hedged; ``cue`` says by what."""

    text: str
    start: int
    end: int
    cue: str


def entity_words(tokens: Iterable[Any]) -> tuple[str, ...]:
    """Lowercased words of an entity without a leading article, possessive or punctuation."""
    words = [
        t.lower_
        for t in tokens
        if not (t.is_punct or t.is_space or t.lower_ in ("'s", "’s", "'", "’"))
    ]
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return tuple(words)


def _entity_anchor(ent: Any, entity_anchors: bool) -> Anchor | None:
    label = ent.label_
    base = {"label": label, "text": ent.text, "start": ent.start_char, "end": ent.end_char}
    if label in NUMBER_LABELS:
        quantity = parse_quantity(ent.text)
        if quantity is not None:
            return Anchor(kind="number", quantity=quantity, words=entity_words(ent), **base)
        return Anchor(kind="number", words=entity_words(ent), **base)
    if label in DATE_LABELS:
        return Anchor(kind="date", date=parse_date(ent.text), words=entity_words(ent), **base)
    if label in TIME_LABELS:
        return Anchor(kind="time", time=parse_time(ent.text), words=entity_words(ent), **base)
    if entity_anchors and label in ENTITY_LABELS:
        words = entity_words(ent)
        return Anchor(kind="entity", words=words, **base) if words else None
    return None


def _hedge_cue(verb: Any) -> str | None:
    for child in verb.children:
        lemma = child.lemma_.lower()
        if child.dep_ == "aux" and lemma in HEDGE_AUXILIARIES:
            return f"modal '{child.text}'"
        if child.dep_ == "advmod" and lemma in HEDGE_ADVERBS:
            return f"adverb '{child.text}'"
    if verb.lemma_.lower() in HEDGE_VERBS:
        return f"verb '{verb.text}'"
    node = verb
    while node.dep_ in ("ccomp", "xcomp", "conj", "advcl") and node.head is not node:
        node = node.head
        if node.lemma_.lower() in HEDGE_VERBS:
            return f"under '{node.text}'"
        for child in node.children:
            if child.dep_ == "aux" and child.lemma_.lower() in HEDGE_AUXILIARIES:
                return f"modal '{child.text}'"
    return None


def _objects(verb: Any) -> list[Any]:
    objects = [c for c in verb.children if c.dep_ in OBJECT_DEPS]
    for prep in (c for c in verb.children if c.dep_ in PREP_OBJECT_DEPS):
        objects.extend(c for c in prep.children if c.dep_ == "pobj")
    return objects


def _lemma(token: Any) -> str:
    return str(token.lemma_).lower()


def claims_of(doc: Any) -> tuple[list[Anchor], list[HedgedClaim]]:
    """Assertive SVO claims and the hedged ones that were filtered out."""
    claims: list[Anchor] = []
    hedged: list[HedgedClaim] = []
    text = doc.text  # built from every token on each access: once, not per claim
    for verb in doc:
        if verb.pos_ not in ("VERB", "AUX") or verb.dep_ in ("aux", "auxpass"):
            continue
        subjects = [c for c in verb.children if c.dep_ in SUBJECT_DEPS]
        objects = [o for o in _objects(verb) if o.pos_ != "PRON"]
        if not subjects or not objects:
            continue
        subject, obj = subjects[0], objects[0]
        start = min(subject.left_edge.idx, verb.idx)
        end = max(t.idx + len(t.text) for t in obj.subtree)
        cue = _hedge_cue(verb)
        if cue is not None:
            hedged.append(HedgedClaim(text[start:end], start, end, cue))
            continue
        claim = Claim(
            subject=None if subject.pos_ == "PRON" else _lemma(subject),
            verb=_lemma(verb),
            obj=_lemma(obj),
            negated=any(c.dep_ == "neg" for c in verb.children),
        )
        claims.append(
            Anchor(kind="claim", label="SVO", text=text[start:end], start=start, end=end,
                   claim=claim)
        )  # fmt: skip
    return claims, hedged


def _proper_noun_runs(doc: Any, covered: set[int]) -> list[Anchor]:
    """Runs of proper nouns the NER left unlabelled ("Crambidae", "The Wolfhounds"): short
    answers are often bare names, which the small English model does not always tag."""
    anchors: list[Anchor] = []
    text = doc.text  # built from every token on each access: once, not per run
    run: list[Any] = []
    for token in [*doc, None]:
        if token is not None and token.pos_ == "PROPN" and token.i not in covered:
            run.append(token)
            continue
        if run:
            words = entity_words(run)
            if words:
                start, end = run[0].idx, run[-1].idx + len(run[-1].text)
                anchors.append(
                    Anchor(kind="entity", label="PROPN", text=text[start:end], start=start,
                           end=end, words=words)
                )  # fmt: skip
            run = []
    return anchors


def term_anchors(doc: Any) -> list[Anchor]:
    """Content words (nouns, proper nouns, adjectives, numbers, verbs) as anchors, each matched
    by its word or lemma: the fallback for an answer with no number, date, entity or claim
    ("alcohol", "a hotel director"), so that only answers with nothing to check defer."""
    return [
        Anchor(
            kind="term",
            label=t.pos_,
            text=t.text,
            start=t.idx,
            end=t.idx + len(t.text),
            words=(t.lower_, t.lemma_.lower()),
        )
        for t in doc
        if t.pos_ in TERM_POS
        and not t.is_stop
        and not t.is_punct
        and any(c.isalnum() for c in t.text)
    ]


def extract_anchors(
    doc: Any, *, entity_anchors: bool = True, term_anchors_always: bool = False
) -> tuple[list[Anchor], list[HedgedClaim]]:
    """All anchors of an answer ``Doc`` in text order, and the hedged claims left out.

    Numbers, dates, times, claims and (with ``entity_anchors``) named entities and unlabelled
    proper-noun runs; when none is found, the content words as ``term`` anchors.
    """
    anchors = [a for ent in doc.ents if (a := _entity_anchor(ent, entity_anchors)) is not None]
    if entity_anchors:
        covered = {t.i for ent in doc.ents for t in ent}
        anchors.extend(_proper_noun_runs(doc, covered))
    claims, hedged = claims_of(doc)
    anchors.extend(claims)
    if term_anchors_always:  # the content words no other anchor but a claim covers
        covered_chars = bytearray(len(doc.text) + 1)  # a span scan per word was quadratic
        for a in anchors:
            if a.kind != "claim":
                covered_chars[a.start : a.end] = b"\x01" * (a.end - a.start)
        anchors.extend(t for t in term_anchors(doc) if not covered_chars[t.start])
    elif not anchors:
        anchors = term_anchors(doc)
    anchors.sort(key=lambda a: (a.start, a.end, a.kind))
    return anchors, hedged
