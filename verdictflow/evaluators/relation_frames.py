"""Relation frames: what the relation checks (:mod:`~verdictflow.evaluators.relations`) read
from one parsed sentence: each verb's agent and patients in the active voice (passives and
converse verbs turned round), the sentence's segments with the names, words and values each
holds (an elided subject inherited), and its comparisons (comparatives, superlatives,
before / after).

Pure: a spaCy ``Span`` in, plain frozen values out; no model, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from verdictflow.evaluators.quantities import parse_date, parse_quantity

#: Verbs whose two roles can be exchanged without changing the fact.
SYMMETRIC_VERBS = frozenset({
    "meet", "marry", "play", "face", "fight", "tie", "draw", "join", "merge", "partner",
    "compete", "talk", "speak", "divorce", "date", "debate", "collaborate", "match",
    "resemble", "equal", "battle", "contact", "negotiate", "share", "wed", "kiss", "hug",
})  # fmt: skip
#: Verbs too general for their roles to be checked: "be", "have", "say", "think"... (their
#: objects are clauses, attributes or possessions, and they join unrelated facts).
LIGHT_VERBS = frozenset({
    "be", "have", "do", "get", "make", "take", "say", "tell", "think", "believe", "claim",
    "feel", "know", "see", "want", "go", "come", "put", "let", "seem", "become", "show",
    "feature", "move", "keep", "find", "use", "include", "involve", "leave",
})  # fmt: skip
#: Converse forms: (verb, preposition) whose subject is the patient and the preposition's
#: object the agent of the verb named: "X lost to Y" = "Y beat X".
CONVERSE: dict[tuple[str, str], str] = {
    ("lose", "to"): "beat", ("fall", "to"): "beat", ("study", "with"): "teach",
    ("study", "under"): "teach", ("learn", "from"): "teach", ("work", "for"): "employ",
    ("buy", "from"): "sell", ("borrow", "from"): "lend", ("follow", ""): "precede",
    ("succeed", ""): "precede", ("trail", ""): "lead",
}  # fmt: skip
#: Verbs that are one verb for the role check ("defeated" states what "beat" states).
VERB_CLASSES: tuple[frozenset[str], ...] = (
    frozenset({"beat", "defeat", "overcome", "outscore", "edge", "overpower", "win"}),
    frozenset({"acquire", "buy", "purchase"}),
    frozenset({"teach", "tutor", "train", "coach", "mentor", "instruct"}),
    frozenset({"hire", "employ", "recruit", "appoint"}),
    frozenset({"cause", "trigger", "produce"}),
    frozenset({"lead", "result"}),
)
#: Prepositions whose object is a patient of the verb: "led to", "resulted in", "gave to".
PATIENT_PREPOSITIONS = frozenset({"to", "in", "into", "on", "against"})
#: Relative pronouns: a clause's subject that stands for the noun the clause modifies.
RELATIVE = frozenset({"who", "which", "that", "whom", "whose"})
#: Comparatives and superlatives that mean less (the rest of the -er / -est words mean more).
LESS_WORDS = frozenset({
    "less", "fewer", "smaller", "shorter", "lower", "lighter", "younger", "slower", "cheaper",
    "narrower", "thinner", "weaker", "poorer", "least", "fewest", "smallest", "shortest",
    "lowest", "lightest", "youngest", "slowest", "cheapest", "narrowest", "thinnest",
    "weakest", "poorest", "newer", "newest", "later", "latest", "last",
})  # fmt: skip
#: Words that order *dates*: with years, "older", "earlier", "first" mean the smaller date.
EARLY_WORDS = frozenset({"older", "oldest", "earlier", "earliest", "first", "before", "sooner"})
LATE_WORDS = frozenset({"newer", "newest", "younger", "youngest", "later", "latest", "last",
                        "after"})  # fmt: skip
#: Spacy entity labels whose text is a value compared by :func:`_quantity`.
AMOUNT_LABELS = frozenset({"CARDINAL", "MONEY", "PERCENT", "QUANTITY"})
#: Words that cut a sentence into segments (with commas and semicolons).
SEGMENT_BREAKS = frozenset({"and", "but", "while", "whereas", "or", ";", ",", "although"})
#: Context sentences longer than this are not parsed (cost bound; such a "sentence" is
#: usually a list or a table flattened into text).
MAX_SUPPORT_CHARS = 600
NAME_POS = frozenset({"PROPN"})
WORD_POS = frozenset({"NOUN", "PROPN", "ADJ"})


@dataclass(frozen=True, slots=True)
class Value:
    """A number or a date a sentence states: its kind (values of one kind are comparable),
    its value, and its character span in the sentence's text."""

    kind: str
    value: Decimal
    start: int
    end: int
    #: The noun it counts ("400 *migrants*", "80 *miles*"), "" when none: two counts of
    #: different things are not rivals for one binding.
    unit: str = ""

    def rivals(self, other: Value) -> bool:
        """Another value of the same kind and unit (a candidate for the same slot)."""
        return (self.kind == other.kind and self.value != other.value
                and (not self.unit or not other.unit or self.unit == other.unit))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Argument:
    """A verb's argument: its head's lemma and the words of its phrase (head, compounds,
    modifiers, entity, "of" complement)."""

    head: str
    words: frozenset[str]
    forms: frozenset[str] = frozenset()  # the head's own forms (word and lemma)
    pronoun: bool = False  # "he", "it", "them": who is meant is not resolved here

    def named_in(self, other: Argument) -> bool:
        """Whether this argument's head is a word of ``other``."""
        return not self.forms.isdisjoint(other.words)


@dataclass(frozen=True, slots=True)
class Clause:
    """One verb with its agent and patients, active voice, converses turned round."""

    verb: str
    agent: Argument | None
    patients: tuple[Argument, ...]
    negated: bool
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of a sentence between breaks: its distinguishing candidates and values."""

    names: frozenset[str]
    words: frozenset[str]
    numbers: frozenset[str]
    values: tuple[Value, ...]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """ "X is longer than Y", "X has the largest share", "A happened before B": the sides as
    the words that find their segment (``other`` is None for a superlative: the subject's value
    against every value of its kind in the sentence)."""

    subject: frozenset[str]
    other: frozenset[str] | None
    #: Whether the subject's value must be the larger, when the values are amounts and when
    #: they are dates ("older" is the larger age but the smaller year); None: not checked.
    amount_larger: bool | None
    date_larger: bool | None
    start: int
    end: int

    def larger(self, kind: str) -> bool | None:
        return self.date_larger if kind.startswith("DATE") else self.amount_larger


@dataclass(frozen=True, slots=True)
class Frame:
    """What the relation checks read from one parsed sentence. Character offsets are those of
    the text the sentence was parsed in; ``offset`` is the sentence's first character there."""

    offset: int
    text: str
    clauses: tuple[Clause, ...]
    segments: tuple[Segment, ...]
    comparisons: tuple[Comparison, ...]


def _forms(token: Any) -> set[str]:
    return {str(token.lower_), str(token.lemma_).lower()}


def _argument(token: Any, ents: Sequence[Any]) -> Argument:
    """A noun phrase's head (a relative pronoun stands for the noun its clause modifies) and
    words: compounds, modifiers, its entity and an "of" complement ("number of strokes")."""
    if token.lower_ in RELATIVE and token.head.dep_ == "relcl":
        token = token.head.head
    words = _forms(token)
    for child in token.children:
        if child.dep_ in ("compound", "amod", "nmod", "poss", "appos"):
            words |= _forms(child)
            if child.dep_ == "appos":
                words |= {w for c in child.subtree if c.pos_ in NAME_POS for w in _forms(c)}
        elif child.dep_ == "prep" and child.lower_ == "of":
            words |= {w for g in child.children if g.dep_ == "pobj" for w in _forms(g)}
    if token.ent_type_:
        for ent in ents:
            if ent.start <= token.i < ent.end:
                words |= {w for t in ent for w in _forms(t)}
    return Argument(str(token.lemma_).lower(), frozenset(words), frozenset(_forms(token)),
                    token.pos_ == "PRON")  # fmt: skip


def _negated(verb: Any) -> bool:
    for child in verb.children:
        if child.dep_ == "neg" or child.lower_ == "never":
            return True
        if child.dep_ in ("dobj", "nsubj", "nsubjpass", "attr") and any(
            g.dep_ == "det" and g.lower_ in ("no", "neither") for g in child.children
        ):
            return True
    return False


def _clause(verb: Any, ents: Sequence[Any]) -> Clause | None:
    lemma = str(verb.lemma_).lower()
    agent: Any = None
    patients: list[Any] = []
    converse: Any = None
    for child in verb.children:
        if child.dep_ == "nsubj":
            agent = child
        elif child.dep_ in ("nsubjpass", "dobj", "dative", "obj"):
            patients.append(child)
        elif child.dep_ in ("agent", "prep"):
            obj = next((g for g in child.children if g.dep_ == "pobj"), None)
            if obj is None:
                continue
            key = (lemma, child.lower_)
            if child.dep_ == "agent":
                agent = obj
            elif key in CONVERSE:
                converse = (CONVERSE[key], obj)
            elif child.lower_ in PATIENT_PREPOSITIONS:
                patients.append(obj)
        elif child.dep_ == "ccomp" or child.dep_ == "xcomp":
            patients.extend(g for g in child.children if g.dep_ == "nsubj")
    passive = any(c.dep_ == "nsubjpass" for c in verb.children)
    if agent is None and verb.dep_ == "conj" and not passive:
        # "... was safe and contained no lead": a coordinated verb shares its head's subject
        agent = next((c for c in verb.head.children if c.dep_ == "nsubj"), None)
    if converse is None and (lemma, "") in CONVERSE and agent is not None and patients:
        converse = (CONVERSE[(lemma, "")], patients[0])
    if converse is not None and agent is not None:  # "X lost to Y": Y beat X
        verb_name, new_agent = converse
        patients, agent, lemma = [agent], new_agent, verb_name
    if agent is None or not patients:
        return None
    start = min(t.idx for t in verb.subtree)
    end = max(t.idx + len(t.text) for t in verb.subtree)
    return Clause(lemma, _argument(agent, ents), tuple(_argument(p, ents) for p in patients),
                  _negated(verb), start, end)  # fmt: skip


def sentence_ents(span: Any) -> list[Any]:
    """The entities inside a span. Not ``span.ents``: spaCy builds every entity of the whole
    document for each call, which made frames quadratic in a long answer (issue 28's 20,000-
    character records: 7 s of 14 in ``Doc.ents``)."""
    doc = span.doc
    return [e for e in doc_ents(doc) if span.start <= e.start and e.end <= span.end]


def doc_ents(doc: Any) -> tuple[Any, ...]:
    """The document's entities, built once per document (kept in its ``user_data``)."""
    cached = doc.user_data.get("verdictflow_ents")
    if cached is None or cached[0] != len(doc):
        cached = (len(doc), tuple(doc.ents))
        doc.user_data["verdictflow_ents"] = cached
    ents: tuple[Any, ...] = cached[1]
    return ents


def values_of(span: Any, ents: Sequence[Any] | None = None) -> list[tuple[Value, Any]]:
    """Every number and date of the span with a value, and its first token."""
    ents = sentence_ents(span) if ents is None else ents
    out: list[tuple[Value, Any]] = []
    covered: set[int] = set()
    for ent in ents:
        value: Value | None = None
        if ent.label_ in AMOUNT_LABELS:
            q = parse_quantity(ent.text)
            if q is not None:
                kind = "PERCENT" if q.percent else ent.label_
                if kind == "CARDINAL" and _year_like(ent):
                    kind = "DATE:y"  # "around 1096", "in 1209": tagged as a count
                value = Value(kind, q.value, ent.start_char, ent.end_char)
        elif ent.label_ == "DATE":
            d = parse_date(ent.text)
            if d.year is not None and d.month is not None:
                value = Value("DATE:ym", Decimal(d.year * 12 + d.month), ent.start_char,
                              ent.end_char)  # fmt: skip
            elif d.year is not None and not d.decade:
                value = Value("DATE:y", Decimal(d.year), ent.start_char, ent.end_char)
            elif d.month is not None:
                value = Value("DATE:m", Decimal(d.month), ent.start_char, ent.end_char)
            elif (q := parse_quantity(ent.text)) is not None:
                if _year_like(ent):  # "around 1096"
                    value = Value("DATE:y", q.value, ent.start_char, ent.end_char)
                elif ent[-1].like_num:  # "and Bob scored 78": a count tagged as a date
                    value = Value("CARDINAL", q.value, ent.start_char, ent.end_char)
                else:  # "88 days": a duration, comparable with others in the same unit
                    unit = str(ent[-1].lemma_).lower()
                    value = Value(f"DURATION:{unit}", q.value, ent.start_char, ent.end_char)
        if value is not None:
            last = ent[-1]
            unit = _unit(last) or ("" if last.like_num else str(last.lemma_).lower())
            out.append((replace(value, unit=unit), ent[0]))
            covered.update(range(ent.start, ent.end))
    for token in span:
        if token.i not in covered and token.like_num and any(c.isdigit() for c in token.text):
            q = parse_quantity(token.text)
            if q is not None:
                end = token.idx + len(token.text)
                kind = "DATE:y" if _year_like(span.doc[token.i : token.i + 1]) else "CARDINAL"
                out.append((Value(kind, q.value, token.idx, end, _unit(token)), token))
    return out


def _unit(token: Any) -> str:
    """The noun a number counts: the head of its ``nummod`` / ``quantmod`` chain."""
    counted = _counted_noun(token)
    return str(token.doc[counted].lemma_).lower() if counted is not None else ""


def _year_like(ent: Any) -> bool:
    """A lone four-digit number from 1000 to 2100 that counts no noun: a year."""
    text = str(ent.text)
    return (len(ent) == 1 and len(text) == 4 and text.isdigit() and 1000 <= int(text) <= 2100
            and ent[0].dep_ != "nummod")  # fmt: skip


def _counted_noun(token: Any) -> int | None:
    """The noun a number counts ("545,000 residents"), which names nothing it binds to."""
    for t in (token, token.head):
        if t.dep_ == "nummod" or t.ent_type_ in AMOUNT_LABELS:
            head = t.head
            if head.pos_ == "NOUN":
                return int(head.i)
    return None


def segments_of(span: Any, values: Sequence[tuple[Value, Any]]) -> tuple[Segment, ...]:
    """The sentence cut at :data:`SEGMENT_BREAKS`. A stretch with no word of its own ("...,
    in 1877") joins the one before; a segment without a subject of its own inherits the
    subject of the nearest one before it that has one ("Curie won the physics prize in 1903
    and the chemistry prize in 1911": Curie is in both, so it singles out neither)."""
    counted = {_counted_noun(tok) for _, tok in values}
    cuts: list[list[Any]] = [[]]
    for t in span:
        if t.lower_ in SEGMENT_BREAKS and cuts[-1] and t.ent_type_ not in NAME_LABELS:
            cuts.append([])
        else:
            cuts[-1].append(t)
    merged: list[list[Any]] = []
    for cut in (c for c in cuts if c):
        own = any(_is_word(t, counted) or _is_name(t, counted) for t in cut)
        if merged and not own and sum(tok.i in {t.i for t in cut} for _, tok in values) <= 1:
            merged[-1].extend(cut)
        else:
            merged.append(cut)
    out = []
    inherited: tuple[set[str], set[str]] = (set(), set())
    for cut in merged:
        ids = {t.i for t in cut}
        names = {w for t in cut if _is_name(t, counted) for w in _forms(t)}
        words = {w for t in cut if _is_word(t, counted) for w in _forms(t)}
        numbers = {str(t.lower_) for t in cut if t.like_num}
        subject = [c for t in cut if t.dep_ in ("nsubj", "nsubjpass") for c in t.subtree]
        lead = next((t for t in cut if not (t.is_punct or t.dep_ == "cc")), None)
        gapped = (  # "..., Venus 225 days": a name opens a segment without a verb
            lead is not None and lead.pos_ == "PROPN"
            and not any(t.pos_ in ("VERB", "AUX") for t in cut)
        )  # fmt: skip
        if subject:
            inherited = (
                {w for c in subject if _is_name(c, counted) for w in _forms(c)},
                {w for c in subject if _is_word(c, counted) for w in _forms(c)},
            )
        elif not gapped:  # elided subject: "... and the chemistry prize in 1911"
            names |= inherited[0]
            words |= inherited[1]
        seg_values = tuple(v for v, tok in values if tok.i in ids)
        out.append(Segment(frozenset(names), frozenset(words), frozenset(numbers), seg_values,
                           cut[0].idx, cut[-1].idx + len(cut[-1].text)))  # fmt: skip
    return tuple(out)


NAME_LABELS = frozenset({"GPE", "ORG", "PERSON", "LOC", "NORP", "FAC", "PRODUCT", "EVENT",
                         "WORK_OF_ART", "LAW", "LANGUAGE"})  # fmt: skip


def _is_name(token: Any, counted: set[int | None]) -> bool:
    return (token.pos_ in NAME_POS or token.ent_type_ in NAME_LABELS) and not token.like_num \
        and token.i not in counted  # fmt: skip


def _is_word(token: Any, counted: set[int | None]) -> bool:
    return (
        token.pos_ in WORD_POS and not token.is_stop and token.i not in counted
        and not token.like_num and token.ent_type_ not in AMOUNT_LABELS | {"DATE", "ORDINAL"}
    )  # fmt: skip


def _side(token: Any) -> frozenset[str]:
    """The words that find a comparison's side: its phrase's content words."""
    return frozenset(
        w for t in token.subtree if t.pos_ in WORD_POS | {"NUM"} and not t.is_stop
        for w in _forms(t)
    )  # fmt: skip


def _subject_of(token: Any) -> Any:
    head = token
    while head is not None:
        subject = next((c for c in head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
        if subject is not None:
            return subject
        if head.head.i == head.i:  # the root (spaCy makes a new Token object per access)
            return None
        head = head.head
    return None


def _predicates(token: Any) -> bool:
    """Whether a degree word says something of its clause's subject: reached from the verb
    through modifiers, objects and attributes only, not from inside a prepositional phrase
    ("tested the patience of the most ardent fan") nor as "at least" / "at most"."""
    if token.i > 0 and token.doc[token.i - 1].lower_ == "at":
        return False
    head = token
    for _ in range(4):
        if any(c.dep_ in ("nsubj", "nsubjpass") for c in head.children):
            return True
        if head.dep_ in ("pobj", "prep", "pcomp", "nsubj", "nsubjpass") or head.head.i == head.i:
            return False
        head = head.head
    return False


def _direction(word: str) -> tuple[bool | None, bool | None]:
    """Whether a degree word's subject has the larger value, among amounts and among dates."""
    if word in EARLY_WORDS:
        return (True if word in ("older", "oldest") else None), False
    if word in LATE_WORDS:
        return (False if word in ("younger", "youngest", "newer", "newest") else None), True
    return word not in LESS_WORDS, None


def _comparisons(span: Any) -> tuple[Comparison, ...]:
    out = []
    for token in span:
        word = token.lower_
        ordinal = word in ("first", "last") and token.dep_ == "advmod"  # "was founded first"
        degree = token.tag_ in ("JJR", "RBR", "JJS", "RBS") or ordinal
        if not degree:
            continue
        superlative = token.tag_ in ("JJS", "RBS") or ordinal
        if not _predicates(token):
            continue  # "the patience of the most ardent fan", "at least three people"
        subject = _subject_of(token)
        if subject is None:
            continue
        other = None
        if not superlative:
            than = next((t for t in token.subtree if t.lower_ == "than"), None)
            if than is None:
                than = next((t for t in span if t.lower_ == "than" and t.i > token.i), None)
            if than is None:
                continue
            objects = [t for t in than.subtree if t.i != than.i and t.pos_ != "ADP"]
            if not objects:
                continue
            than_words = frozenset(w for t in objects if not t.is_stop for w in _forms(t))
            prep = next((t for t in than.subtree if t.pos_ == "ADP" and t.i != than.i), None)
            if prep is not None:  # "higher in 2021 than in 2020": sides are the two "in"s
                mine = next((t for t in span if t.lower_ == prep.lower_ and t.i < than.i
                             and t.i != prep.i), None)  # fmt: skip
                if mine is None:
                    continue
                subject_words = frozenset(
                    w for t in mine.subtree if t.i != mine.i and not t.is_stop for w in _forms(t)
                )
            else:
                subject_words = _side(subject)
            other = than_words
        else:
            subject_words = _side(subject)
        amount_larger, date_larger = _direction(word)
        out.append(Comparison(subject_words, other, amount_larger, date_larger,
                              span.start_char, span.end_char))  # fmt: skip
    for token in span:  # "A happened before B"
        if token.lower_ in ("before", "after") and token.dep_ in ("mark", "prep"):
            sub = token.head if token.dep_ == "mark" else token
            main = sub.head if token.dep_ == "mark" else token.head
            main_subject = _subject_of(main)
            if main_subject is None:
                continue
            other_words: frozenset[str] | None = None
            if token.dep_ == "mark":
                other_subject = _subject_of(sub)
                if other_subject is not None:
                    other_words = _side(other_subject)
            else:
                other_words = frozenset(
                    w for t in token.subtree if t.i != token.i and not t.is_stop
                    for w in _forms(t)
                )  # fmt: skip
            if not other_words:
                continue
            out.append(
                Comparison(
                    _side(main_subject),
                    other_words,
                    None,
                    token.lower_ == "after",
                    span.start_char,
                    span.end_char,
                )
            )
    return tuple(out)


def frame(span: Any) -> Frame:
    """The relations of one parsed sentence (a spaCy ``Span``)."""
    offset = span.start_char
    ents = sentence_ents(span)
    values = values_of(span, ents)
    clauses = tuple(
        c for t in span
        if t.pos_ in ("VERB", "AUX") and (c := _clause(t, ents)) is not None
    )  # fmt: skip
    return Frame(offset, str(span.text), clauses, segments_of(span, values), _comparisons(span))
