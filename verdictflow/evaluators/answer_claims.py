"""An answer as the faithfulness signals read it: its sentences, which of them are claims, and
each content word with the lemmas, WordNet stand-ins and antonyms it may be matched by.

Built once per answer from its spaCy parse (:func:`answer_sentences`), by the analyzer, and
read by every signal family in :mod:`~verdictflow.evaluators.faithfulness_signals`. A sentence
that asks the user something back or is a pleasantry is not a claim, so it has nothing to be
faithful to.

Pure: a parsed document in, plain values out; WordNet is reached through the
:class:`WordRelations` protocol the caller passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from verdictflow.evaluators.anchors import ENTITY_LABELS

#: Words that negate their clause, in the answer and (as words of a sentence) in the contexts:
#: the same list on both sides, so "has no plans" is not a negation the answer added.
NEGATIONS = frozenset({"not", "n't", "never", "no", "nobody", "nothing", "none", "neither", "nor"})


@dataclass(frozen=True, slots=True)
class AnswerToken:
    """A content word of the answer: its forms, part of speech and character span."""

    lower: str
    lemma: str
    pos: str
    start: int
    end: int
    entity: bool  # inside any entity the NER found (names, numbers, dates, times, ordinals)
    named: bool = False  # a name or a number: see ``answer_sentences``
    #: WordNet antonyms of the word's lemma, and the words it may stand in for
    #: (:meth:`WordRelations.stands_for`); looked up by the analyzer, empty without a lexicon.
    antonyms: frozenset[str] = frozenset()
    stands_for: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class AnswerSentence:
    """One answer sentence: its span, content words, whether it is negated, and whether it
    states anything (``claim``: False for a question back to the user or a pleasantry)."""

    start: int
    end: int
    tokens: tuple[AnswerToken, ...]
    negated: bool
    claim: bool = True


#: Words of the pleasantries a chat answer wraps its facts in ("Hope that helps!", "Great
#: question!", "You're welcome"), and of the acknowledgements a conversational turn opens with
#: ("Yeah.", "That's true.", "You're right.", "I see.", "I didn't know that."): a sentence
#: made of these, interjections and stop words states nothing.
PHATIC_WORDS = frozenset({
    "hope", "help", "helpful", "welcome", "thank", "thanks", "glad", "happy", "sure", "great",
    "good", "nice", "awesome", "cool", "wow", "sorry", "hi", "hello", "hey", "bye", "goodbye",
    "fun", "exciting", "wonderful", "interesting", "question", "sound", "luck", "pleasure",
    "course", "absolutely", "definitely", "fascinating", "amazing", "lovely", "ok", "okay",
    "yes", "yeah", "yep", "yup", "true", "right", "correct", "agree", "exactly", "indeed",
    "totally", "oh", "ah", "haha", "lol", "hmm", "see", "know", "think", "guess", "believe",
    "point", "funny", "crazy", "incredible", "neat", "impressive", "surprising",
})  # fmt: skip
#: An exclamation this short without a name or number is a reaction, not a claim ("How
#: exciting!", "Your dad has good taste!"); "It was the tallest building in the world!" is one.
SHORT_EXCLAMATION = 6
#: A question this short without a name is addressed to the user ("Which one?").
SHORT_QUESTION = 6


def _is_claim(sent: Any) -> bool:
    """Whether a sentence of a (conversational) answer states something the contexts should
    back. Not a claim: a question to the user ("Do you have a favourite rider?"), a short
    exclamation without a name or number ("That's wonderful!"), a sentence of pleasantries
    only ("Hope that helps."). Dialogue error analysis (docs/verdicts/faithfulness.md): these
    turned grounded chat answers into FAILs, their words being found in no context."""
    words = [t for t in sent if not (t.is_punct or t.is_space)]
    if not words:
        return False
    last = sent[-1].text if not sent[-1].is_space else sent[-2].text if len(sent) > 1 else ""
    if last.endswith("?"):
        # a question back to the user ("Have you been there?"), not a rhetorical one that
        # carries the content ("How can we build agents that solve social dilemmas?")
        return not (
            any(t.lower_ in ("you", "your", "yours") for t in words)
            or (len(words) <= SHORT_QUESTION and not any(_is_named(t) for t in words))
        )
    if all(_phatic(t) for t in words):
        return False  # "Hope that helps!" (spaCy may take "Hope" for a name), "That's true."
    if any(_is_named(t) for t in words):
        return True
    return not (last.endswith("!") and len(words) < SHORT_EXCLAMATION)


def _phatic(token: Any) -> bool:
    """A word a pleasantry or an acknowledgement is made of: a stop word (not a number), an
    interjection, or one of :data:`PHATIC_WORDS` (as itself or its lemma)."""
    if token.is_stop and not token.like_num:
        return True
    return (
        token.pos_ == "INTJ" or token.lower_ in PHATIC_WORDS or token.lemma_.lower() in PHATIC_WORDS
    )


def _is_named(token: Any) -> bool:
    """A proper noun, a number, or a word of a named entity (person, place, organisation...):
    what a paraphrase keeps and a fabrication changes. The common words of a vague date or
    time ("the night before", "the second half", "7 pm"'s "pm") are not names: they are
    rephrased freely ("eve" -> "night"), and the hallucination check's parsed value catches a
    wrong date or time."""
    return token.like_num or token.pos_ in ("PROPN", "NUM") or token.ent_type_ in ENTITY_LABELS


class WordRelations(Protocol):
    """What the signals ask a lexicon (``verdictflow.lexicon.Lexicon``): words by ``(lemma,
    coarse part of speech)``."""

    def antonyms(self, lemma: str, pos: str) -> frozenset[str]: ...

    def stands_for(self, lemma: str, pos: str) -> frozenset[str]: ...


#: Parts of speech whose words are looked up in the lexicon.
LEXICON_POS = frozenset({"NOUN", "VERB", "ADJ", "ADV"})


def _relations_of(token: Any, lexicon: WordRelations | None) -> dict[str, frozenset[str]]:
    if lexicon is None or token.pos_ not in LEXICON_POS or token.ent_type_:
        return {}
    lemma = token.lemma_.lower()
    return {
        "antonyms": lexicon.antonyms(lemma, token.pos_),
        "stands_for": lexicon.stands_for(lemma, token.pos_),
    }


def answer_sentences(doc: Any, lexicon: WordRelations | None = None) -> tuple[AnswerSentence, ...]:
    """The answer's sentences from its parsed ``Doc``. Content words: not punctuation or space,
    with a letter or digit, and not a stop word unless a number or inside an entity (spaCy's
    stop list has "two" and "three", which a wrong count must not hide behind). With a
    ``lexicon``, each noun, verb, adjective and adverb outside an entity carries its antonyms
    and the words it may stand in for."""
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
                named=_is_named(t),
                **_relations_of(t, lexicon),
            )
            for t in sent
            if not (t.is_punct or t.is_space)
            and (not t.is_stop or t.like_num or t.ent_type_)  # "two", "Three Rivers"
            and any(c.isalnum() for c in t.text)
        )
        negated = any(t.lower_ in NEGATIONS or t.dep_ == "neg" for t in sent)
        sentences.append(
            AnswerSentence(sent.start_char, sent.end_char, tokens, negated, _is_claim(sent))
        )
    return tuple(sentences)
